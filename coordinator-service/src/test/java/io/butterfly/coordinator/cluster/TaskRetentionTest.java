package io.butterfly.coordinator.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.raft.ClusterStateCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Issue 47, item 4: the replicated state keeps bounded task outputs whatever clients ask. Observed before: 100
 * requests of 1 000 tokens with 20 logprob alternatives made a 50 MB Raft snapshot (~1.1 MB of heap per task on every
 * replica), and the newest 1 000 ended tasks were all kept, over 1 GB against a 512 MB heap. Now each task keeps every
 * token id and log-probability but the alternatives of its newest tokens only ({@link TaskRetention}), and ended
 * tasks are kept within a byte budget. Seeded, as the journal would record them: progress in batches.
 */
class TaskRetentionTest {

    private static final String REPLICA = "coordinator-0";
    private static final int TOKENS = 1000;
    private static final int ALTERNATIVES = 20;

    @Test
    void aHundredTasksOfAThousandTokensWithTwentyAlternativesKeepABoundedSnapshot() {
        Fixtures f = Fixtures.ready();
        Random rnd = new Random(47);
        for (int task = 0; task < 100; task++) {
            record(f, rnd, "t" + task, TOKENS, ALTERNATIVES, true);
        }

        ClusterState s = f.state();
        assertThat(s.tasks()).hasSize(100);
        for (TaskRecord t : s.tasks().values()) {
            assertThat(t.tokenIds()).as("every token id kept").hasSize(TOKENS);
            assertThat(t.logprobs()).as("and its log-probability").hasSize(TOKENS);
            long alternatives = t.topLogprobs().stream().mapToLong(List::size).sum();
            assertThat(alternatives * TaskRetention.ALTERNATIVE_BYTES).isLessThanOrEqualTo(TaskRetention.MAX_ALTERNATIVE_BYTES);
            assertThat(t.topLogprobs().get(TOKENS - 1)).as("the newest tokens keep theirs").hasSize(ALTERNATIVES);
            assertThat(t.topLogprobs().get(0)).as("the oldest keep none").isEmpty();
        }
        int snapshot = ClusterStateCodec.encode(s).length;
        assertThat(snapshot).as("snapshot bytes (50 MB before)").isLessThan(10 << 20);
        System.out.println("snapshot of 100 tasks of 1000 tokens with 20 alternatives: " + snapshot + " bytes");
    }

    @Test
    void endedTasksAreKeptWithinTheirByteBudgetAndRunningOnesAlways() {
        Fixtures f = Fixtures.ready();
        Random rnd = new Random(4747);
        for (int task = 0; task < 5; task++) {
            record(f, rnd, "running-" + task, 200, ALTERNATIVES, false);
        }
        for (int task = 0; task < 900; task++) {
            record(f, rnd, "ended-" + task, TOKENS, 0, true);
        }

        ClusterState s = f.state();
        long endedBytes = s.tasks().values().stream().filter(t -> t.state().terminal())
                .mapToLong(TaskRetention::outputBytes).sum();
        assertThat(endedBytes).isLessThanOrEqualTo(TaskRetention.MAX_ENDED_OUTPUT_BYTES);
        assertThat(s.tasks().keySet()).as("running tasks are never dropped")
                .contains("running-0", "running-1", "running-2", "running-3", "running-4");
        assertThat(s.tasks().keySet()).as("the newest ended are kept, the oldest dropped")
                .contains("ended-899").doesNotContain("ended-0");
        long kept = s.tasks().values().stream().filter(t -> t.state().terminal()).count();
        assertThat(kept).isBetween(500L, (long) TaskRetention.MAX_ENDED_TASKS);
    }

    @Test
    void aResumedClientFindsTheAlternativesOfTheTokensItMayHaveMissed() {
        Fixtures f = Fixtures.ready();
        record(f, new Random(7), "t", 400, ALTERNATIVES, false);
        TaskRecord t = f.state().tasks().get("t");
        // a progress interval is a few tokens; the newest 51 keep all 20 alternatives (16 KiB)
        int keptTokens = (int) (TaskRetention.MAX_ALTERNATIVE_BYTES / (ALTERNATIVES * TaskRetention.ALTERNATIVE_BYTES));
        for (int i = 400 - keptTokens; i < 400; i++) {
            assertThat(t.topLogprobs().get(i)).hasSize(ALTERNATIVES);
        }
        assertThat(t.topLogprobs().get(400 - keptTokens - 1)).isEmpty();
        assertThat(t.topLogprobs()).hasSize(400);
    }

    /** Records task {@code id}: its start, its tokens in batches of 25 (a progress interval), and its end if asked. */
    private static void record(Fixtures f, Random rnd, String id, int tokens, int alternatives, boolean end) {
        long at = 1_000 + f.nextIndex();
        List<TaskEvent> events = new ArrayList<>();
        events.add(new TaskEvent.Started(id, 8, TaskRequest.of(List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L), tokens, 0.8, 1.0,
                0, 7, alternatives, true, List.of(), null), at));
        List<Long> ids = new ArrayList<>();
        for (int from = 0; from < tokens; from += 25) {
            List<TaskEvent.Token> batch = new ArrayList<>();
            for (int i = from; i < Math.min(tokens, from + 25); i++) {
                List<TaskEvent.Alternative> top = new ArrayList<>();
                for (int a = 0; a < alternatives; a++) {
                    top.add(new TaskEvent.Alternative(rnd.nextInt(32_000), -rnd.nextDouble() * 10));
                }
                long token = rnd.nextInt(32_000);
                ids.add(token);
                batch.add(new TaskEvent.Token(token, -rnd.nextDouble(), top));
            }
            events.add(new TaskEvent.Progressed(id, from, batch, at));
            if (events.size() >= 20) {
                f.apply(new ClusterCommand.TasksRecorded(REPLICA, 500, List.copyOf(events), at));
                events.clear();
            }
        }
        if (end) {
            events.add(new TaskEvent.Finished(id, ids, "length", at));
        }
        f.apply(new ClusterCommand.TasksRecorded(REPLICA, 500, List.copyOf(events), at));
    }
}
