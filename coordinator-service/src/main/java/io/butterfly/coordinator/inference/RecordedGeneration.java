package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.model.ServedModel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * A task's tokens as its record in the replicated state holds them, read into a sequence as if it had generated them
 * here: the text each token settled (decoded as its owner decoded it), their log-probabilities, and whether they
 * already end the generation. A client that comes back for a task gets the tokens it missed from here; an ended
 * task's answer is built from here.
 */
final class RecordedGeneration {

    private RecordedGeneration() {
    }

    /**
     * Adds the record's tokens to {@code s} (a fresh sequence of the same request); returns the finish reason when
     * they end the generation (an end-of-sequence token, a stop string, max_tokens), null when it goes on.
     */
    static String replayInto(Sequence s, TaskRecord t) {
        List<Long> ids = t.tokenIds();
        String finish = null;
        for (int i = 0; i < ids.size() && finish == null; i++) {
            long id = ids.get(i);
            s.generated.add(id);
            s.logprobs.add(i < t.logprobs().size() ? t.logprobs().get(i) : null);
            s.topLogprobs.add(i < t.topLogprobs().size() ? alternatives(t.topLogprobs().get(i)) : List.of());
            boolean eos = !s.ignoreEos && s.model.config().endsSequence(id);
            boolean last = eos || s.generated.size() == s.maxTokens; // as its owner told the text
            IncrementalText.Piece piece = s.text == null ? null : s.text.add(id, last);
            if (piece != null) {
                s.pieces.add(piece.text());
            }
            if (eos || piece != null && piece.stopped()) {
                finish = "stop";
            } else if (s.generated.size() == s.maxTokens) {
                finish = "length";
            }
        }
        return finish;
    }

    private static List<TokenLogprob> alternatives(List<TaskEvent.Alternative> top) {
        return top.stream().map(a -> new TokenLogprob((int) a.tokenId(), a.logprob())).toList();
    }

    /**
     * The answer of an ended task, as its record tells it, for a client that repeats its request or reconnects
     * after the end; {@code listener} is told the tokens after {@code afterIndex} at once.
     */
    static RequestHandle ended(Sequence s, TaskRecord t, int afterIndex) {
        CompletableFuture<GenerationResult> result = new CompletableFuture<>();
        if (t.state() == TaskRecord.State.COMPLETED) {
            replayInto(s, t);
            tell(s, afterIndex);
            String text = s.text != null && s.text.stopped() ? s.text.textBeforeStop()
                    : s.model.tokenizer().decode(s.generated.stream().mapToLong(Long::longValue).toArray());
            result.complete(new GenerationResult(t.taskId(), s.model.manifest().modelId(), s.promptTokenIds(),
                    List.copyOf(s.generated), text, t.finishReason(), logprobs(s), List.copyOf(s.topLogprobs), 0, 0,
                    Math.max(0, t.updatedAtMs() - t.createdAtMs()), Map.of(), 0, 0, 0));
        } else {
            result.completeExceptionally(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                    "task " + t.taskId() + " failed: " + t.error()));
        }
        return new Handle(s, result);
    }

    /** Tells {@code s}'s listener its tokens after {@code afterIndex}. */
    static void tell(Sequence s, int afterIndex) {
        if (s.listener != null) {
            for (int i = Math.max(0, afterIndex + 1); i < s.generated.size(); i++) {
                s.listener.onToken(s.token(i));
            }
        }
    }

    private static List<Double> logprobs(Sequence s) {
        return new ArrayList<>(s.logprobs); // may hold nulls where progress was lost: answered as null
    }

    /** A generation that ended before it was asked for: nothing runs, nothing is left to stop. */
    private record Handle(Sequence s, CompletableFuture<GenerationResult> result) implements RequestHandle {

        @Override
        public String taskId() {
            return s.taskId();
        }

        @Override
        public ServedModel model() {
            return s.model;
        }

        @Override
        public List<Long> promptTokenIds() {
            return s.promptTokenIds();
        }

        @Override
        public void cancel(String reason) {
        }

        @Override
        public void detach(String reason) {
        }
    }
}
