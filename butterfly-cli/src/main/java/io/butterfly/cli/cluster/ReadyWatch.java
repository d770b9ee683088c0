package io.butterfly.cli.cluster;

import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.api.ApiJson;
import io.butterfly.common.api.NodeStatus;
import io.butterfly.common.api.SystemStatus;
import io.butterfly.common.concurrent.DaemonThreads;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import tools.jackson.databind.json.JsonMapper;

/**
 * Watches a coordinator until the system is READY, printing each worker's load progress as it changes; gives up
 * when a worker fails, the cluster cannot hold the model, or the weights fail cross-validation. Runs beside the
 * services' start-up (it polls until the coordinator answers), in a thread of its own.
 */
final class ReadyWatch {

    /** Reads the coordinator's answers as the records it writes. */
    private static final JsonMapper JSON = ApiJson.reader();

    private final String url;
    private final Duration timeout;
    private final PrintWriter out;
    private volatile boolean cancelled;

    private ReadyWatch(String url, Duration timeout, PrintWriter out) {
        this.url = url;
        this.timeout = timeout;
        this.out = out;
    }

    /** Starts watching the coordinator at {@code url}; {@link #await()} gives the outcome. */
    static Running start(String url, Duration timeout, PrintWriter out) {
        ReadyWatch watch = new ReadyWatch(url, timeout, out);
        CompletableFuture<Boolean> ready = new CompletableFuture<>();
        Thread thread = DaemonThreads.named("ready-watch").newThread(() -> {
            try {
                ready.complete(watch.watch());
            } catch (InterruptedException e) {
                ready.complete(false);
            } catch (RuntimeException e) {
                ready.completeExceptionally(e);
            }
        });
        thread.start();
        return new Running(watch, thread, ready);
    }

    /** A watch under way. */
    record Running(ReadyWatch watch, Thread thread, CompletableFuture<Boolean> ready) {

        /** Whether the system became READY (false: it failed, or did not in time, and the watch said why). */
        boolean await() throws InterruptedException {
            try {
                return ready.get();
            } catch (ExecutionException e) {
                throw new IllegalStateException("watching for READY failed", e.getCause());
            }
        }

        void cancel() {
            watch.cancelled = true;
            thread.interrupt();
        }
    }

    private boolean watch() throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<String, String> shown = new LinkedHashMap<>();
        while (System.nanoTime() < deadline && !cancelled) {
            SystemStatus state;
            try {
                state = JSON.readValue(PlainHttp.get(url + "/api/v1/system/state", Duration.ofSeconds(10)).body(),
                        SystemStatus.class);
            } catch (IOException | RuntimeException notYet) {
                Thread.sleep(500);
                continue;
            }
            for (NodeStatus node : orEmpty(state.nodes())) {
                if (!(node instanceof NodeStatus.Worker n) || !"worker".equals(n.role())) {
                    continue;
                }
                String line = progressLine(n);
                if (!line.equals(shown.get(n.id()))) {
                    shown.put(n.id(), line);
                    out.println(line);
                }
                if (n.error() != null) {
                    out.println("worker " + n.id() + " failed: " + n.error().code() + ": " + n.error().message());
                    return false;
                }
            }
            if (state.modelError() != null) {
                out.println("the model cannot be served: " + state.modelError().cause());
                return false;
            }
            SystemStatus.Feasibility feasibility = state.feasibility();
            if (feasibility != null && !feasibility.feasible()) {
                out.println("the cluster cannot hold the model: " + feasibility.reason());
                return false;
            }
            SystemStatus.WeightValidation validation = state.weightValidation();
            if (validation != null && "INVALID".equals(validation.status())) {
                out.println("weights failed cross-validation: " + JSON.writeValueAsString(validation.problems()));
                return false;
            }
            if ("READY".equals(state.systemState())) {
                out.printf("READY: model %s on %d worker(s), epoch %d, merkle root %s%n", state.modelId(),
                        orEmpty(state.pipeline()).size(), state.epoch(), state.merkleRoot());
                List<String> spares = spares(state);
                if (!spares.isEmpty()) {
                    // Workers the plan leaves out (--spares, or more workers than layers): say so rather than let
                    // them look lost.
                    out.printf("spare%s %s: no layers, standing by to take the stage of a worker that fails or is"
                            + " drained%n", spares.size() == 1 ? "" : "s", String.join(", ", spares));
                }
                out.flush();
                return true;
            }
            Thread.sleep(100); // `up` returns (and bench-load stops its clock) within ~0.1 s of READY
        }
        if (!cancelled) {
            out.println("timed out waiting for READY");
        }
        return false;
    }

    /** Workers outside the plan standing by, as the state lists them. */
    static List<String> spares(SystemStatus state) {
        return orEmpty(state.spares());
    }

    private static <T> List<T> orEmpty(List<T> list) {
        return list == null ? List.of() : list;
    }

    static String progressLine(NodeStatus.Worker n) {
        double p = n.progress();
        int width = 20;
        int filled = (int) Math.round(p * width);
        String bar = "#".repeat(filled) + ".".repeat(width - filled);
        List<Integer> range = n.layerRange();
        String layers = range != null ? "layers [" + range.get(0) + ", " + range.get(1) + ")" : "unassigned";
        Double eta = n.load() == null ? null : n.load().estimatedCompletionSecs();
        String etaText = eta != null && eta > 0 ? String.format(" ETA %.0fs", eta) : "";
        return String.format("  %-10s %-18s [%s] %3d%% %s%s", n.id(), layers, bar, Math.round(p * 100),
                n.partitionState(), etaText);
    }
}
