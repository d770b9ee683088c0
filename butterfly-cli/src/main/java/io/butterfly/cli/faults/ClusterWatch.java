package io.butterfly.cli.faults;

import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.concurrent.DaemonThreads;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Asks every coordinator replica for its state, every {@code period}, while a schedule runs: who says it leads in
 * which term, and each epoch reported (a committed re-plan), into the {@link History}; and, on demand, whether the
 * cluster is READY again.
 */
public final class ClusterWatch implements AutoCloseable {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Supplier<List<String>> replicas;
    private final History history;
    private final Thread thread;
    private volatile boolean running = true;

    public ClusterWatch(Supplier<List<String>> replicas, History history, Duration period) {
        this.replicas = replicas;
        this.history = history;
        this.thread = DaemonThreads.start("cluster-watch", () -> {
            while (running) {
                replicas.get().forEach(this::observe);
                try {
                    Thread.sleep(period.toMillis());
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    private void observe(String base) {
        JsonNode s = state(base);
        if (s == null) {
            return;
        }
        JsonNode raft = s.path("raft");
        if ("LEADER".equals(raft.path("role").asString())) {
            history.leader(raft.path("term").asLong(), raft.path("self_id").asString());
        }
        history.epoch(s.path("epoch").asLong());
    }

    /** A replica's {@code /api/v1/system/state}, or null while it does not answer. */
    public static JsonNode state(String base) {
        try {
            PlainHttp.Response r = PlainHttp.get(base + "/api/v1/system/state", Duration.ofSeconds(2));
            return r.status() == 200 ? JSON.readTree(r.body()) : null;
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /**
     * READY again: every replica answers READY with a known leader and no task paused by a fault, and every worker is
     * back, in the pipeline or a spare.
     */
    public static boolean ready(List<String> replicas, Set<String> workers) {
        return notReady(replicas, workers) == null;
    }

    /** What keeps the cluster from being {@link #ready READY} (the first thing found), or null when it is. */
    public static String notReady(List<String> replicas, Set<String> workers) {
        for (String base : replicas) {
            String why = notReady(base, state(base), workers);
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /** What keeps one replica's answer {@code s} (null: none) from READY, or null when it is READY. */
    static String notReady(String base, JsonNode s, Set<String> workers) {
        if (s == null) {
            return base + " does not answer";
        }
        if (!"READY".equals(s.path("system_state").asString())) {
            return base + " is " + s.path("system_state").asString();
        }
        if (!s.path("raft").path("leader_id").isString()) {
            return base + " knows no leader";
        }
        for (JsonNode t : s.path("paused_tasks")) {
            // A stream its client closed waits too (for the client to pick it up with Last-Event-ID) until its
            // task times out: that is no fault of the cluster's.
            if (!t.path("reason").asString().contains("client closed")) {
                return base + ": task " + t.path("task_id").asString() + " of " + t.path("owner").asString()
                        + " paused since " + t.path("paused_at").asString() + " (" + t.path("reason").asString() + ")";
            }
        }
        java.util.Set<String> missing = new java.util.TreeSet<>(workers);
        s.path("pipeline").forEach(n -> missing.remove(n.asString()));
        s.path("spares").forEach(n -> missing.remove(n.asString()));
        if (!missing.isEmpty()) {
            return base + ": workers " + missing + " neither in the pipeline nor spares";
        }
        return null;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.interrupt();
        thread.join(5_000);
    }
}
