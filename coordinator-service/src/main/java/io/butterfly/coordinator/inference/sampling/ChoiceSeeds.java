package io.butterfly.coordinator.inference.sampling;

import java.util.SplittableRandom;

/**
 * The seed of each of a request's {@code n} choices, derived from the request's: choice 0 keeps it (so {@code n} = 1 is
 * the request as it was), the others get seeds of their own, the same for the same request every time.
 */
public final class ChoiceSeeds {

    /** Choices one request may ask for ({@code n}). */
    public static final int MAX_CHOICES = 16;

    private ChoiceSeeds() {
    }

    public static long of(long seed, int index) {
        return index == 0 ? seed : new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * index)).nextLong();
    }
}
