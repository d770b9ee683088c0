package io.butterfly.it;

import io.butterfly.common.api.WorkerStatus;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Three coordinator replicas in one Raft group, as separate processes: the leader is SIGKILLed, a surviving
 * replica is elected in a higher term and serves READY, a task committed before the kill is readable on the
 * survivors, inference works again and gives the same tokens, and no term ever had two leaders.
 */
class CoordinatorFailoverIT {

    private static final List<String> REPLICAS = List.of("coordinator", "coordinator-1", "coordinator-2");
    private static final String REQUEST = "{\"token_ids\": [1, 17, 230, 5], \"max_tokens\": 6}";

    @TempDir
    Path work;

    /** term -> the leader some replica reported for it; a second, different leader fails the test. */
    private final Map<Long, String> leaders = new HashMap<>();

    @Test
    void killingTheLeaderElectsANewOneThatServesCommittedTasksAndInference() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            // One worker: the claim is about the coordinators' group; a pipeline of several workers is
            // WorkerCountEquivalenceIT's, and each process fewer is one fewer JVM to start on two cores.
            cluster.startWorker(0);
            cluster.startCoordinatorGroup("tiny-llama", 1, 3);
            String leader = awaitLeaderServing(cluster, REPLICAS, -1, Duration.ofMinutes(5));
            String ownerId = state(cluster, leader).path("raft").path("self_id").asString(); // runs the task below

            LocalCluster.Reply before = cluster.postTo(leader, "/api/v1/inference", REQUEST);
            assertThat(before.status()).as(before.body()).isEqualTo(200);
            String taskId = before.json().path("task_id").asString();
            JsonNode tokens = before.json().path("token_ids");
            // The leader records its tasks a flush interval after it answers them: killed before, the task would
            // be lost with it. Recorded, it outlives the replica that ran it.
            assertThat(cluster.awaitTaskEnded(leader, taskId).path("state").asString()).isEqualTo("COMPLETED");

            // The assignment named every replica: the worker heartbeats all three, so the next leader's
            // failure detector already has its history (a worker it had not heard yet would look silent to it).
            awaitHeartbeatsToAllReplicas(cluster, "worker-0");

            // A replica that started last may not have joined the group yet: killing the leader then leaves one of
            // three, and no quorum, as it should. The claim is about a whole group, and about whoever leads it when
            // the kill comes (on a loaded machine leadership may have moved since the task ran).
            String killed = awaitEveryReplicaCaughtUp(cluster);
            long term = state(cluster, killed).path("raft").path("term").asLong();

            cluster.kill(killed);
            List<String> survivors = REPLICAS.stream().filter(r -> !r.equals(killed)).toList();
            String next = awaitLeaderServing(cluster, survivors, term, Duration.ofSeconds(30));
            assertThat(state(cluster, next).path("raft").path("term").asLong()).isGreaterThan(term);

            for (String r : survivors) {
                JsonNode task = awaitTaskApplied(cluster, r, taskId);
                assertThat(task.path("state").asString()).as(r + ": " + task).isEqualTo("COMPLETED");
                // The committed result itself, not just its state, survives the leader.
                assertThat(task.path("token_ids")).as(r + ": " + task).isEqualTo(tokens);
                assertThat(task.path("owner").asString()).as(r + ": " + task).isEqualTo(ownerId);
            }
            LocalCluster.Reply after = cluster.postTo(next, "/api/v1/inference", REQUEST);
            assertThat(after.status()).as(after.body()).isEqualTo(200);
            assertThat(after.json().path("token_ids")).isEqualTo(tokens);
        }
    }

    /**
     * The task as replica {@code r} reports it, once it has applied it: the entry was committed before the
     * kill, but a follower applies it only when it learns the commit index (from the new leader, after the
     * election), so it may answer "no task" for a moment.
     */
    private static JsonNode awaitTaskApplied(LocalCluster cluster, String r, String taskId) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        LocalCluster.Reply reply = cluster.getFrom(r, "/api/v1/tasks/" + taskId + "/state");
        while (reply.status() == 404 && System.nanoTime() < deadline) {
            Thread.sleep(200);
            reply = cluster.getFrom(r, "/api/v1/tasks/" + taskId + "/state");
        }
        return reply.json();
    }

    /**
     * The replica that leads once every replica follows it and has applied what it had applied when asked (the leader
     * asked again if leadership moves meanwhile).
     */
    private static String awaitEveryReplicaCaughtUp(LocalCluster cluster) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        Map<String, String> last = new java.util.TreeMap<>();
        while (System.nanoTime() < deadline) {
            last.clear();
            String leader = null;
            for (String r : REPLICAS) {
                JsonNode s = state(cluster, r);
                if (s != null && "LEADER".equals(s.path("raft").path("role").asString())) {
                    leader = r;
                }
            }
            JsonNode leading = leader == null ? null : state(cluster, leader);
            if (leading == null) {
                Thread.sleep(100);
                continue;
            }
            String leaderId = leading.path("raft").path("self_id").asString();
            long applied = leading.path("raft").path("last_applied_index").asLong();
            for (String r : REPLICAS) {
                JsonNode s = state(cluster, r);
                JsonNode raft = s == null ? null : s.path("raft");
                if (raft != null && leaderId.equals(raft.path("leader_id").asString())
                        && raft.path("last_applied_index").asLong() >= applied) {
                    continue;
                }
                last.put(r, raft == null ? "no answer" : raft.toString());
            }
            if (last.isEmpty()) {
                return leader;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("replicas not caught up with one leader: " + last);
    }

    private static void awaitHeartbeatsToAllReplicas(LocalCluster cluster, String worker) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        java.util.Set<String> acked = new java.util.TreeSet<>();
        while (System.nanoTime() < deadline) {
            acked.clear();
            for (WorkerStatus.Connection c : cluster.getFrom(worker, "/api/v1/worker/connections")
                    .as(WorkerStatus.Connection[].class)) {
                if (c.kind().equals("heartbeat") && c.lastHeartbeatAck() != null) {
                    acked.add(c.peer());
                }
            }
            if (acked.size() == REPLICAS.size()) {
                return;
            }
            Thread.sleep(200);
        }
        assertThat(acked).as(worker + " heartbeats acknowledged by").hasSize(REPLICAS.size());
    }

    /** Polls the replicas until one leads in a term above {@code afterTerm} and serves READY; checks one leader per term. */
    private String awaitLeaderServing(LocalCluster cluster, List<String> replicas, long afterTerm, Duration timeout)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            for (String r : replicas) {
                JsonNode s = state(cluster, r);
                if (s == null) {
                    continue;
                }
                JsonNode raft = s.path("raft");
                if ("LEADER".equals(raft.path("role").asString())) {
                    String previous = leaders.putIfAbsent(raft.path("term").asLong(), raft.path("self_id").asString());
                    assertThat(previous == null || previous.equals(raft.path("self_id").asString()))
                            .as("two leaders in term %d: %s and %s", raft.path("term").asLong(), previous,
                                    raft.path("self_id").asString()).isTrue();
                    if (raft.path("term").asLong() > afterTerm && "READY".equals(s.path("system_state").asString())) {
                        return r;
                    }
                }
            }
            Thread.sleep(50);
        }
        StringBuilder last = new StringBuilder();
        for (String r : replicas) {
            JsonNode s = state(cluster, r);
            last.append('\n').append(r).append(": ").append(s == null ? "no answer" : s.path("system_state").asString()
                    + ", raft " + s.path("raft") + ", nodes " + s.path("nodes"));
        }
        throw new IllegalStateException("no replica of " + replicas + " leads a READY system within " + timeout + last
                + "\n" + cluster.tails());
    }

    private static JsonNode state(LocalCluster cluster, String replica) {
        try {
            LocalCluster.Reply r = cluster.getFrom(replica, "/api/v1/system/state");
            return r.status() == 200 ? r.json() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
