package io.butterfly.cli.cluster;

import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.concurrent.DaemonThreads;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Watches a coordinator until the system is READY, printing each worker's load progress as it changes; gives up
 * when a worker fails, the cluster cannot hold the model, or the weights fail cross-validation. Runs beside the
 * services' start-up (it polls until the coordinator answers), in a thread of its own.
 */
final class ReadyWatch {

    private static final JsonMapper JSON = JsonMapper.builder().build();

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
            JsonNode state;
            try {
                state = JSON.readTree(PlainHttp.get(url + "/api/v1/system/state", Duration.ofSeconds(10)).body());
            } catch (IOException | RuntimeException notYet) {
                Thread.sleep(500);
                continue;
            }
            for (JsonNode n : state.path("nodes")) {
                if (!"worker".equals(n.path("role").asString())) {
                    continue;
                }
                String line = progressLine(n);
                String id = n.path("id").asString();
                if (!line.equals(shown.get(id))) {
                    shown.put(id, line);
                    out.println(line);
                }
                if (n.has("error")) {
                    out.println("worker " + id + " failed: " + n.path("error").path("code").asString() + ": "
                            + n.path("error").path("message").asString());
                    return false;
                }
            }
            JsonNode feasibility = state.path("feasibility");
            if (feasibility.isObject() && !feasibility.path("feasible").asBoolean(true)) {
                out.println("the cluster cannot hold the model: " + feasibility.path("reason").asString());
                return false;
            }
            JsonNode validation = state.path("weight_validation");
            if (validation.isObject() && "INVALID".equals(validation.path("status").asString())) {
                out.println("weights failed cross-validation: " + validation.path("problems"));
                return false;
            }
            if ("READY".equals(state.path("system_state").asString())) {
                out.printf("READY: model %s on %d worker(s), epoch %d, merkle root %s%n",
                        state.path("model_id").asString(), state.path("pipeline").size(),
                        state.path("epoch").asLong(), state.path("merkle_root").asString());
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
    static List<String> spares(JsonNode state) {
        List<String> spares = new ArrayList<>();
        state.path("spares").forEach(n -> spares.add(n.asString()));
        return spares;
    }

    static String progressLine(JsonNode n) {
        double p = n.path("progress").asDouble();
        int width = 20;
        int filled = (int) Math.round(p * width);
        String bar = "#".repeat(filled) + ".".repeat(width - filled);
        JsonNode range = n.path("layer_range");
        String layers = range.isArray() ? "layers [" + range.get(0).asInt() + ", " + range.get(1).asInt() + ")" : "unassigned";
        JsonNode eta = n.path("load").path("estimated_completion_secs");
        String etaText = eta.isNumber() && eta.asDouble() > 0 ? String.format(" ETA %.0fs", eta.asDouble()) : "";
        return String.format("  %-10s %-18s [%s] %3d%% %s%s", n.path("id").asString(), layers, bar, Math.round(p * 100),
                n.path("partition_state").asString(), etaText);
    }
}
