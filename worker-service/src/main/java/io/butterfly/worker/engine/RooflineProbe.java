package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.core.Linear;
import ai.djl.pytorch.jni.JniUtils;

/**
 * What the engine attains on this machine, through libtorch on the engine thread with the process's intra-op threads
 * (those a partition computes with): the memory read bandwidth of a matrix-vector product over matrices far larger
 * than the caches, the kernel a one-sequence decode step is made of, and the float32 rate of a large matrix product,
 * what a long prefill is made of. {@code butterfly bench} compares a worker's decode and prefill with them.
 */
public final class RooflineProbe {

    /** Rows and columns of each matrix the read bandwidth streams through (64 MiB of float32). */
    private static final int SIDE = 4096;
    /** Rows and columns of the matrix product (2.1 GFLOP). */
    private static final int MATMUL = 1024;

    /**
     * @param readGbps     bytes of matrix read per second by a matrix-vector product, GB/s (the best pass)
     * @param readBytes    the matrices' size
     * @param matmulGflops float32 multiply-adds x2 per second of a square product, GFLOP/s (the best repetition)
     * @param threads      the engine's intra-op threads they were measured with
     */
    public record Rates(double readGbps, long readBytes, double matmulGflops, int threads) {
    }

    private RooflineProbe() {
    }

    /**
     * Measures both rates, each for about {@code budgetNanos} (at least three passes).
     *
     * @param readMiB how much matrix the bandwidth pass reads, MiB (a multiple of 64; several times the last-level
     *                cache)
     */
    public static Rates measure(int readMiB, long budgetNanos) {
        return EngineThread.call(() -> {
            try (NDManager manager = NDManager.newBaseManager(EngineSetup.ENGINE)) {
                int matrices = Math.max(1, readMiB / 64);
                double gbps = readGbps(manager, matrices, budgetNanos);
                return new Rates(gbps, (long) matrices * SIDE * SIDE * Float.BYTES, matmulGflops(manager, budgetNanos),
                        JniUtils.getNumThreads());
            }
        });
    }

    private static double readGbps(NDManager manager, int matrices, long budgetNanos) {
        NDArray[] weights = new NDArray[matrices];
        for (int i = 0; i < matrices; i++) {
            weights[i] = manager.randomUniform(-1, 1, new Shape(SIDE, SIDE), DataType.FLOAT32);
        }
        NDArray x = manager.randomUniform(-1, 1, new Shape(1, SIDE), DataType.FLOAT32);
        long best = best(budgetNanos, () -> {
            for (NDArray w : weights) {
                Linear.linear(x, w).close();
            }
        });
        return (double) matrices * SIDE * SIDE * Float.BYTES / best;
    }

    private static double matmulGflops(NDManager manager, long budgetNanos) {
        NDArray a = manager.randomUniform(-1, 1, new Shape(MATMUL, MATMUL), DataType.FLOAT32);
        NDArray b = manager.randomUniform(-1, 1, new Shape(MATMUL, MATMUL), DataType.FLOAT32);
        long best = best(budgetNanos, () -> a.matMul(b).close());
        return 2.0 * MATMUL * MATMUL * MATMUL / best;
    }

    /** The fastest of the passes run within the budget (one untimed first), nanoseconds. */
    private static long best(long budgetNanos, Runnable pass) {
        pass.run();
        long start = System.nanoTime();
        long best = Long.MAX_VALUE;
        int passes = 0;
        while (passes < 3 || System.nanoTime() - start < budgetNanos) {
            long t0 = System.nanoTime();
            pass.run();
            best = Math.min(best, System.nanoTime() - t0);
            passes++;
        }
        return Math.max(1, best);
    }
}
