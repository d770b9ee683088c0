package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.TaskRequest;
import java.util.List;
import java.util.stream.LongStream;

/** Task requests for tests that only need one of a prompt length. */
public final class TestRequests {

    private TestRequests() {
    }

    /** A greedy request of {@code promptTokens} tokens (1, 2, ...) for 8 tokens. */
    public static TaskRequest prompt(int promptTokens) {
        List<Long> prompt = LongStream.rangeClosed(1, promptTokens).boxed().toList();
        return TaskRequest.of(prompt, 8, 0, 1, 0, 0, 0, false, List.of(), null);
    }
}
