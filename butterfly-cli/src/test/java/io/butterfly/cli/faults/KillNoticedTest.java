package io.butterfly.cli.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/** The soak's wait for a kill to be noticed before its wait for READY (issue 47: the READY wait after a kill). */
class KillNoticedTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A READY state of three pipeline workers and a spare, as {@code /api/v1/system/state} answers it. */
    private static ObjectNode ready(long epoch, String lastRecoveryStart) {
        ObjectNode s = JSON.createObjectNode();
        s.put("system_state", "READY");
        s.put("epoch", epoch);
        s.putNull("recovery");
        s.putObject("raft").put("leader_id", "coordinator-0");
        s.putArray("paused_tasks");
        if (lastRecoveryStart == null) {
            s.putNull("last_recovery");
        } else {
            s.putObject("last_recovery").put("started_at", lastRecoveryStart).put("cause", "worker-1 FAILED");
        }
        ArrayNode pipeline = s.putArray("pipeline");
        ArrayNode nodes = s.putArray("nodes");
        nodes.addObject().put("id", "coordinator-0").put("role", "coordinator");
        for (String id : List.of("worker-0", "worker-1", "worker-2", "worker-3")) {
            if (!id.equals("worker-3")) {
                pipeline.add(id);
            }
            ObjectNode n = nodes.addObject().put("id", id).put("state", "ACTIVE");
            n.putNull("suspected_at");
            n.putNull("failed_at");
        }
        s.putArray("spares").add("worker-3");
        return s;
    }

    private static ObjectNode worker(ObjectNode state, String id) {
        for (JsonNode n : state.path("nodes")) {
            if (id.equals(n.path("id").asString(null))) {
                return (ObjectNode) n;
            }
        }
        throw new AssertionError(id);
    }

    private static ObjectNode with(ObjectNode state, Consumer<ObjectNode> change) {
        ObjectNode copy = state.deepCopy();
        change.accept(copy);
        return copy;
    }

    @Test
    void theStateFromBeforeTheKillIsNotNoticedThoughItIsReady() {
        ObjectNode before = ready(4, "2026-12-04T19:00:00Z");
        assertThat(KillNoticed.seen(before, before.deepCopy(), "worker-1")).isNull();
        assertThat(KillNoticed.seen(null, before, "worker-1")).as("no state before the kill").isNull();
        assertThat(KillNoticed.seen(before, null, "worker-1")).as("no answer now").isNull();
        assertThat(ClusterWatch.notReady("coordinator-0", before, java.util.Set.of("worker-0", "worker-1", "worker-2",
                "worker-3"))).as("READY all the same: a READY wait alone would end at once").isNull();
    }

    @Test
    void aClusterThatLeftReadyOrRecoversHasNoticed() {
        ObjectNode before = ready(4, null);
        assertThat(KillNoticed.seen(before, with(before, s -> s.put("system_state", "RECOVERING")), "worker-1"))
                .isEqualTo("system_state RECOVERING");
        assertThat(KillNoticed.seen(before, with(before, s -> s.putObject("recovery").put("phase", "DETECTED")
                .put("cause", "worker-1 FAILED")), "worker-1")).isEqualTo("recovery DETECTED (worker-1 FAILED)");
    }

    @Test
    void aRecoveryThatCameAndWentBetweenTwoLooksCountsByWhatItLeft() {
        ObjectNode before = ready(4, "2026-12-04T19:00:00Z");
        assertThat(KillNoticed.seen(before, ready(5, "2026-12-04T19:00:00Z"), "worker-1")).isEqualTo("epoch 4 -> 5");
        assertThat(KillNoticed.seen(before, ready(4, "2026-12-04T19:04:00Z"), "worker-1"))
                .startsWith("a recovery started at 2026-12-04T19:04:00Z");
        assertThat(KillNoticed.seen(ready(4, null), ready(4, "2026-12-04T19:04:00Z"), "worker-1")).isNotNull();
        assertThat(KillNoticed.seen(before, with(before, s -> worker(s, "worker-1").put("failed_at",
                "2026-12-04T19:04:01Z")), "worker-1")).isEqualTo("worker-1 failed_at 2026-12-04T19:04:01Z");
    }

    @Test
    void theVictimsOwnStateCountsAndAnotherWorkersOldMarksDoNot() {
        ObjectNode before = with(ready(4, null), s -> worker(s, "worker-1").put("failed_at", "2026-12-04T18:00:00Z"));
        assertThat(KillNoticed.seen(before, before.deepCopy(), "worker-1")).as("a failure from an earlier kill").isNull();
        assertThat(KillNoticed.seen(before, with(before, s -> worker(s, "worker-1").put("state", "SUSPECT")), "worker-1"))
                .isEqualTo("worker-1 SUSPECT");
        assertThat(KillNoticed.seen(before, with(before, s -> worker(s, "worker-2").put("state", "FAILED")), "worker-1"))
                .as("another worker's state is not this kill").isNull();
        assertThat(KillNoticed.seen(before, with(before, s -> {
            ArrayNode p = s.putArray("pipeline");
            p.add("worker-0").add("worker-3").add("worker-2");
        }), "worker-1")).isEqualTo("worker-1 left the pipeline");
        assertThat(KillNoticed.seen(before, with(before, s -> ((ArrayNode) s.path("nodes")).remove(2)), "worker-1"))
                .isEqualTo("worker-1 left the membership");
    }

    /**
     * The soak of 2026-12-04 evening timed READY "with it back" 1.1 s after a kill: the victim was SUSPECT, still in the
     * pipeline, and the cluster READY. Back means its new process joined and the coordinator holds it healthy.
     */
    @Test
    void aSuspectVictimInAReadyClusterIsNotBackUntilItsNewProcessJoined() {
        ObjectNode suspect = with(ready(4, null), s -> worker(s, "worker-1").put("state", "SUSPECT"));
        java.util.Set<String> workers = java.util.Set.of("worker-0", "worker-1", "worker-2", "worker-3");
        assertThat(ClusterWatch.notReady("coordinator-0", suspect, workers)).as("READY all the same").isNull();
        ObjectNode joined = JSON.createObjectNode().put("node_id", "worker-1").put("joined", true);
        assertThat(KillNoticed.notBack(suspect, joined, "worker-1")).isEqualTo("worker-1 is SUSPECT");
        assertThat(KillNoticed.notBack(with(suspect, s -> worker(s, "worker-1").put("state", "FAILED")), joined,
                "worker-1")).isEqualTo("worker-1 is FAILED");
        ObjectNode healthy = ready(5, "2026-12-04T20:16:02Z");
        assertThat(KillNoticed.notBack(healthy, null, "worker-1")).isEqualTo("worker-1 does not answer");
        assertThat(KillNoticed.notBack(healthy, JSON.createObjectNode().put("joined", false), "worker-1"))
                .isEqualTo("worker-1 has not joined");
        assertThat(KillNoticed.notBack(with(healthy, s -> ((ArrayNode) s.path("nodes")).remove(2)), joined, "worker-1"))
                .isEqualTo("worker-1 is not a member");
        assertThat(KillNoticed.notBack(healthy, joined, "worker-1")).isNull();
        assertThat(KillNoticed.notBack(with(healthy, s -> worker(s, "worker-1").put("state", "JOINED")), joined,
                "worker-1")).as("back as a spare").isNull();
    }

    @Test
    void anyOneSignOfTheKillIsSeenAndNoChangeElsewhereIs() {
        SplittableRandom random = new SplittableRandom(47);
        List<Consumer<ObjectNode>> signs = List.of(
                s -> s.put("system_state", random.nextBoolean() ? "RECOVERING" : "DEGRADED"),
                s -> s.putObject("recovery").put("phase", "PLANNING"),
                s -> s.put("epoch", s.path("epoch").asLong() + 1 + random.nextInt(3)),
                s -> s.putObject("last_recovery").put("started_at", "2026-12-04T20:" + (10 + random.nextInt(50)) + ":00Z"),
                s -> worker(s, "worker-1").put("state", random.nextBoolean() ? "SUSPECT" : "FAILED"),
                s -> worker(s, "worker-1").put("suspected_at", "2026-12-04T20:00:0" + random.nextInt(10) + "Z"),
                s -> s.putArray("pipeline").add("worker-0").add("worker-2"));
        List<Consumer<ObjectNode>> noise = List.of(
                s -> worker(s, "worker-2").put("failed_at", "2026-12-04T20:00:00Z"),
                s -> worker(s, "worker-3").put("state", "FAILED"),
                s -> s.put("last_applied_index", random.nextInt(1_000)),
                s -> s.putArray("spares"));
        for (int i = 0; i < 500; i++) {
            ObjectNode before = ready(1 + random.nextInt(20), random.nextBoolean() ? null : "2026-12-04T19:00:00Z");
            ObjectNode now = before.deepCopy();
            for (int k = random.nextInt(3); k > 0; k--) {
                noise.get(random.nextInt(noise.size())).accept(now);
            }
            assertThat(KillNoticed.seen(before, now, "worker-1")).as("noise only, round %d", i).isNull();
            signs.get(random.nextInt(signs.size())).accept(now);
            assertThat(KillNoticed.seen(before, now, "worker-1")).as("a sign, round %d", i).isNotNull();
        }
    }
}
