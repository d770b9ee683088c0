package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.model.ServedModel;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A task's tokens as its record in the replicated state holds them, read into a request as if it had generated them
 * here: the text each token settled (decoded as its owner decoded it), their log-probabilities, and whether they
 * already end the generation. A client that comes back for a task gets the tokens it missed from here; an ended
 * task's answer is built from here.
 */
final class RecordedGeneration {

    private RecordedGeneration() {
    }

    /**
     * Adds the record's tokens to {@code out} (a fresh request of the same generation); returns the finish reason when
     * they end the generation (an end-of-sequence token, a stop string, max_tokens), null when it goes on.
     */
    static String replayInto(RequestOutput out, TaskRecord t) {
        List<Long> ids = t.tokenIds();
        String finish = null;
        for (int i = 0; i < ids.size() && finish == null; i++) {
            finish = out.addRecorded(ids.get(i), i < t.logprobs().size() ? t.logprobs().get(i) : null,
                    i < t.topLogprobs().size() ? alternatives(t.topLogprobs().get(i)) : List.of());
        }
        return finish;
    }

    private static List<TokenLogprob> alternatives(List<TaskEvent.Alternative> top) {
        return top.stream().map(a -> new TokenLogprob((int) a.tokenId(), a.logprob())).toList();
    }

    /**
     * The answer of an ended task, as its record tells it, for a client that repeats its request or reconnects
     * after the end; {@code out}'s listener is told the tokens after {@code afterIndex} at once.
     */
    static RequestHandle ended(RequestOutput out, TaskRecord t, int afterIndex) {
        CompletableFuture<GenerationResult> result = new CompletableFuture<>();
        if (t.state() == TaskRecord.State.COMPLETED) {
            replayInto(out, t);
            out.tellAfter(afterIndex);
            List<Long> tokens = out.sequence().generated();
            result.complete(new GenerationResult(t.taskId(), out.model().manifest().modelId(), out.promptTokenIds(),
                    tokens, out.text(tokens), t.finishReason(), out.logprobs(), List.copyOf(out.topLogprobs()), 0, 0,
                    Math.max(0, t.updatedAtMs() - t.createdAtMs()), Map.of(), 0, 0, 0));
        } else {
            result.completeExceptionally(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                    "task " + t.taskId() + " failed: " + t.error()));
        }
        return new Handle(out, result);
    }

    /** A generation that ended before it was asked for: nothing runs, nothing is left to stop. */
    private record Handle(RequestOutput out, CompletableFuture<GenerationResult> result) implements RequestHandle {

        @Override
        public String taskId() {
            return out.taskId();
        }

        @Override
        public ServedModel model() {
            return out.model();
        }

        @Override
        public List<Long> promptTokenIds() {
            return out.promptTokenIds();
        }

        @Override
        public void cancel(String reason) {
        }

        @Override
        public void detach(String reason) {
        }
    }
}
