package io.butterfly.cli.faults;

import java.util.Objects;
import tools.jackson.databind.JsonNode;

/**
 * Whether a coordinator has noticed that a worker was killed, from its {@code /api/v1/system/state} just before the
 * kill and now. Right after a SIGKILL the state still says READY with the worker in the pipeline until the failure
 * detector or a broken stream tells it otherwise, so a wait for READY that starts then ends at once, before anything
 * was recovered: a time to READY is only meaningful once the kill has been seen.
 *
 * <p>Seen when any of these differs from before: the cluster is not READY or a recovery is under way; the epoch moved
 * (a re-plan); another recovery was recorded; the victim is SUSPECT or FAILED, has a new suspected/failed time, left the
 * pipeline or left the membership. The marks that stay (epoch, last recovery, failed time) make a recovery that came and
 * went between two looks count too.
 */
public final class KillNoticed {

    private KillNoticed() {
    }

    /** What shows that the kill of {@code victim} was noticed, or null while nothing does. {@code before} may be null. */
    public static String seen(JsonNode before, JsonNode now, String victim) {
        if (now == null) {
            return null; // no answer is no evidence either way
        }
        String system = now.path("system_state").asString("");
        if (!"READY".equals(system)) {
            return "system_state " + system;
        }
        JsonNode recovery = now.path("recovery");
        if (recovery.isObject()) {
            return "recovery " + recovery.path("phase").asString("") + " (" + recovery.path("cause").asString("") + ")";
        }
        if (before != null && now.path("epoch").asLong() > before.path("epoch").asLong()) {
            return "epoch " + before.path("epoch").asLong() + " -> " + now.path("epoch").asLong();
        }
        String lastRecovery = now.path("last_recovery").path("started_at").asString(null);
        if (before != null && lastRecovery != null
                && !lastRecovery.equals(before.path("last_recovery").path("started_at").asString(null))) {
            return "a recovery started at " + lastRecovery + " (" + now.path("last_recovery").path("cause").asString("") + ")";
        }
        JsonNode node = worker(now, victim);
        if (node == null) {
            return victim + " left the membership";
        }
        String state = node.path("state").asString("");
        if ("SUSPECT".equals(state) || "FAILED".equals(state)) {
            return victim + " " + state;
        }
        JsonNode was = before == null ? null : worker(before, victim);
        for (String mark : new String[] {"failed_at", "suspected_at"}) {
            String at = node.path(mark).asString(null);
            if (at != null && (was == null || !Objects.equals(at, was.path(mark).asString(null)))) {
                return victim + " " + mark + " " + at;
            }
        }
        if (before != null && contains(before.path("pipeline"), victim) && !contains(now.path("pipeline"), victim)) {
            return victim + " left the pipeline";
        }
        return null;
    }

    /**
     * What keeps a killed worker from being back, or null when it is: its new process answers and has joined, and the
     * coordinator holds it neither SUSPECT nor FAILED. A READY cluster alone does not say so: between SUSPECT and FAILED
     * the state is still READY with the dead worker in the pipeline (seen in the soak of 2026-12-04 evening: READY
     * "with it back" 1.1 s after a kill, on a worker held SUSPECT).
     *
     * @param now    the coordinator's state
     * @param itself the victim's own {@code /api/v1/worker/state} (null: no answer)
     */
    public static String notBack(JsonNode now, JsonNode itself, String victim) {
        if (itself == null) {
            return victim + " does not answer";
        }
        if (!itself.path("joined").asBoolean(false)) {
            return victim + " has not joined";
        }
        JsonNode node = now == null ? null : worker(now, victim);
        if (node == null) {
            return victim + " is not a member";
        }
        String state = node.path("state").asString("");
        if ("SUSPECT".equals(state) || "FAILED".equals(state)) {
            return victim + " is " + state;
        }
        return null;
    }

    private static JsonNode worker(JsonNode state, String id) {
        for (JsonNode n : state.path("nodes")) {
            if (id.equals(n.path("id").asString(null))) {
                return n;
            }
        }
        return null;
    }

    private static boolean contains(JsonNode ids, String id) {
        for (JsonNode n : ids) {
            if (id.equals(n.asString(null))) {
                return true;
            }
        }
        return false;
    }
}
