package io.butterfly.coordinator.jobs;

/**
 * The sampling seed of one sample of a job (docs/jobs.md): a SplitMix64 mix of the job's seed, the step and the
 * sample's dataset position, so that the same (seed, step, position) always draws the same tokens, whichever batch
 * the sample is in and whichever replica generates it. A client can compute it the same way.
 */
public final class SampleSeeds {

    private static final long GAMMA = 0x9E3779B97F4A7C15L;

    private SampleSeeds() {
    }

    /** The seed of the sample at dataset {@code position} in pass {@code step} of the job seeded {@code seed}. */
    public static long of(long seed, long step, long position) {
        return mix(mix(mix(seed + GAMMA) ^ step) + GAMMA ^ position);
    }

    /** SplitMix64's finalizer. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
