package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.ToIntFunction;

/**
 * A pipeline whose last stage answers each sequence's step with the logits a script gives: the step's index for that
 * sequence (0 for its prefill, then one per token) picks the likeliest token (logit 5, the rest 0). It records what it
 * was sent and released; answers come back at once, or when the test releases them ({@link #hold()}).
 */
public final class ScriptedPipeline implements Pipeline {

    private final int vocab;
    private final ToIntFunction<Integer> tokenAt;
    private final Map<String, Integer> steps = new HashMap<>();
    private final List<StepInput> sent = new CopyOnWriteArrayList<>();
    private final List<String> released = new CopyOnWriteArrayList<>();
    private final List<Runnable> held = new ArrayList<>();
    private boolean holding;

    /** @param tokenAt the token a sequence's step {@code i} makes likeliest */
    public ScriptedPipeline(int vocab, ToIntFunction<Integer> tokenAt) {
        this.vocab = vocab;
        this.tokenAt = tokenAt;
    }

    /** Every sequence's step {@code i} makes {@code script[i % length]} likeliest. */
    public static ScriptedPipeline following(int vocab, long[] script) {
        return new ScriptedPipeline(vocab, i -> (int) script[i % script.length]);
    }

    @Override
    public Route route(List<NodeInfo> stages) {
        return new Route() {
        };
    }

    @Override
    public synchronized CompletableFuture<StepResult> submit(Route route, StepInput input) {
        sent.add(input);
        float[] logits = new float[input.logitRows() * vocab];
        int row = 0;
        for (StepInput.Slice s : input.sequences()) {
            int step = steps.merge(s.sequenceId(), 1, Integer::sum) - 1;
            if (!s.skipLogits()) {
                logits[row++ * vocab + tokenAt.applyAsInt(step)] = 5f;
            }
        }
        CompletableFuture<StepResult> answer = new CompletableFuture<>();
        StepResult result = answer(logits, input.logitRows(), vocab);
        if (holding) {
            held.add(() -> answer.complete(result));
        } else {
            answer.complete(result);
        }
        return answer;
    }

    /** Answers from now on wait for {@link #releaseHeld()}. */
    public synchronized void hold() {
        holding = true;
    }

    /** Sends the answers held back so far, in order, and answers at once again. */
    public void releaseHeld() {
        List<Runnable> now;
        synchronized (this) {
            now = List.copyOf(held);
            held.clear();
            holding = false;
        }
        now.forEach(Runnable::run);
    }

    @Override
    public void abortThrough(String nodeId, String why) {
    }

    @Override
    public void release(Route route, List<String> sequenceIds) {
        released.addAll(sequenceIds);
    }

    /**
     * A pipeline whose last stage answers each step with what {@code answer} returns (or fails it with what it
     * throws), on another thread, as a real pipeline answers.
     */
    public static Pipeline answering(java.util.function.Function<StepInput, StepResult> answer) {
        return new Pipeline() {
            @Override
            public Route route(List<NodeInfo> stages) {
                return new Route() {
                };
            }

            @Override
            public CompletableFuture<StepResult> submit(Route route, StepInput input) {
                return CompletableFuture.supplyAsync(() -> answer.apply(input));
            }

            @Override
            public void abortThrough(String nodeId, String why) {
            }

            @Override
            public void release(Route route, List<String> sequenceIds) {
            }
        };
    }

    /** The steps sent so far. */
    public List<StepInput> sent() {
        return sent;
    }

    /** The sequences released on the stages so far. */
    public List<String> released() {
        return released;
    }

    /** The last stage's answer: {@code rows} rows of {@code vocab} logits. */
    public static StepResult answer(float[] logits, int rows, int vocab) {
        return new StepResult() {
            @Override
            public float[] logits() {
                return logits;
            }

            @Override
            public List<Long> logitsShape() {
                return List.of((long) rows, (long) vocab);
            }

            @Override
            public List<StageTiming> timings() {
                return List.of();
            }
        };
    }
}
