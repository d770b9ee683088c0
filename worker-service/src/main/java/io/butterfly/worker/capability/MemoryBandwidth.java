package io.butterfly.worker.capability;

/**
 * Main-memory bandwidth (docs/initialization-and-bootstrap.md §2.3 memory_bandwidth_gbps): copies a 32 MiB
 * array (larger than most last-level caches, so it streams from DRAM) until the time budget, which
 * includes allocating and touching the arrays, is spent, and reports the best pass in GB/s, counting
 * the bytes read and the bytes written. Decode is memory-bound, so this predicts
 * per-token speed better than FLOPs.
 */
public final class MemoryBandwidth {

    private static final int LONGS = 4 << 20; // 32 MiB

    private MemoryBandwidth() {
    }

    /** @param budgetNanos wall-clock budget for the whole measurement; at least one timed pass always runs */
    public static double measureGbps(long budgetNanos) {
        long start = System.nanoTime();
        long[] src = new long[LONGS];
        long[] dst = new long[LONGS];
        for (int i = 0; i < LONGS; i += 512) {
            src[i] = i; // touch every page so the first pass does not measure page faults
            dst[i] = -i;
        }
        System.arraycopy(src, 0, dst, 0, LONGS); // warm-up pass
        long best = Long.MAX_VALUE;
        int passes = 0;
        do {
            long t0 = System.nanoTime();
            System.arraycopy(src, 0, dst, 0, LONGS);
            best = Math.min(best, System.nanoTime() - t0);
            passes++;
        } while (System.nanoTime() - start < budgetNanos && passes < 200);
        if (dst[LONGS - 512] != src[LONGS - 512]) {
            throw new IllegalStateException("copy did not happen"); // keeps the copies observable
        }
        return 2.0 * LONGS * Long.BYTES / Math.max(best, 1);
    }
}
