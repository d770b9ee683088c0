package io.butterfly.coordinator.cluster;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * What the replicated state keeps of tasks, bounded whatever clients ask (docs/architecture.md, tasks).
 * Every replica applies the same limits (they are constants, not settings, so that the reducer stays the same
 * function everywhere):
 * <ul>
 *   <li>a task's token ids and each token's log-probability, all of them (bounded by {@code max-new-tokens}): what a
 *       replica replays to carry the task on, and what an ended task answers;</li>
 *   <li>the alternatives ({@code top_logprobs}) of a task's newest tokens only, {@value #MAX_ALTERNATIVE_BYTES} bytes of
 *       them (at 20 alternatives, its last 51 tokens): what a resumed client may have missed is its newest tokens,
 *       a progress interval's worth; older tokens keep none, so 20 alternatives no longer multiply a task's record
 *       by 20;</li>
 *   <li>ended tasks: the newest {@value #MAX_ENDED_TASKS}, and no more than {@value #MAX_ENDED_OUTPUT_BYTES} bytes of
 *       their outputs together (oldest dropped first); running tasks are never dropped.</li>
 * </ul>
 * Bytes are counted as the log carries them: {@value #TOKEN_BYTES} a token (id and log-probability), as many an
 * alternative.
 */
public final class TaskRetention {

    public static final int MAX_ENDED_TASKS = 1000;
    public static final long MAX_ALTERNATIVE_BYTES = 16 * 1024;
    public static final long MAX_ENDED_OUTPUT_BYTES = 8L << 20;
    static final int TOKEN_BYTES = 16;
    static final int ALTERNATIVE_BYTES = 16;

    private TaskRetention() {
    }

    /**
     * A task's output as the log carries it, at most: its tokens, and the alternatives it may keep (as many as its
     * request asks a token, within {@link #MAX_ALTERNATIVE_BYTES}). Counted from sizes, not by walking the lists: the
     * reducer asks it of every ended task at every batch.
     */
    public static long outputBytes(TaskRecord t) {
        long tokens = t.tokenIds().size();
        int asked = t.request() == null ? 0 : Math.max(0, t.request().logprobs());
        return tokens * TOKEN_BYTES + Math.min(tokens * asked * ALTERNATIVE_BYTES, MAX_ALTERNATIVE_BYTES);
    }

    /**
     * {@code tops} (one list of alternatives per token, in order) with the alternatives of the newest tokens within
     * {@link #MAX_ALTERNATIVE_BYTES}; older tokens' lists emptied, so the lists stay aligned with the tokens.
     */
    static List<List<TaskEvent.Alternative>> newestAlternatives(List<List<TaskEvent.Alternative>> tops) {
        long budget = MAX_ALTERNATIVE_BYTES;
        int keepFrom = tops.size();
        while (keepFrom > 0) {
            long bytes = (long) tops.get(keepFrom - 1).size() * ALTERNATIVE_BYTES;
            if (bytes > budget) {
                break;
            }
            budget -= bytes;
            keepFrom--;
        }
        if (keepFrom == 0) {
            return tops;
        }
        List<List<TaskEvent.Alternative>> kept = new ArrayList<>(tops.size());
        kept.addAll(Collections.nCopies(keepFrom, List.of()));
        kept.addAll(tops.subList(keepFrom, tops.size()));
        return kept;
    }

    /**
     * Drops the oldest ended tasks while more than {@link #MAX_ENDED_TASKS} are kept or their outputs pass
     * {@link #MAX_ENDED_OUTPUT_BYTES}; running tasks stay.
     */
    static void prune(Map<String, TaskRecord> tasks) {
        long ended = 0;
        long bytes = 0;
        for (TaskRecord t : tasks.values()) {
            if (t.state().terminal()) {
                ended++;
                bytes += outputBytes(t);
            }
        }
        var it = tasks.values().iterator();
        while ((ended > MAX_ENDED_TASKS || bytes > MAX_ENDED_OUTPUT_BYTES) && it.hasNext()) {
            TaskRecord t = it.next();
            if (t.state().terminal()) {
                it.remove();
                ended--;
                bytes -= outputBytes(t);
            }
        }
    }
}
