package io.butterfly.coordinator.jobs;

import java.util.List;

/**
 * One generated sample of a batch.
 *
 * @param position     its dataset position
 * @param seed         the sampling seed it was generated with ({@link SampleSeeds})
 * @param finishReason "stop" or "length"
 * @param tokenIds     the generated token ids
 * @param text         the generated text
 */
public record Sample(long position, long seed, String finishReason, List<Long> tokenIds, String text) {

    public Sample {
        tokenIds = List.copyOf(tokenIds);
    }
}
