package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.core.Linear;
import ai.djl.pytorch.jni.IValue;
import ai.djl.pytorch.jni.JniUtils;

/**
 * What the engine attains on this machine, through libtorch on the calling thread with the process's intra-op threads
 * (those a partition computes with): the memory read bandwidth of a matrix-vector product over matrices far larger
 * than the caches, the kernel a one-sequence decode step is made of, and the float32 rate of a large matrix product,
 * what a long prefill is made of. {@code butterfly bench} compares a worker's decode and prefill with them.
 *
 * <p>Each rate is the better of two kernels: libtorch's own ({@code linear}, {@code matmul}) and the projections a
 * CPU stage computes with ({@link TorchScript#compileForCpu}: oneDNN's where this libtorch has it), so that the bound
 * is what this machine attains, not what one kernel does.
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
     * Measures both rates, each kernel for about {@code budgetNanos} (at least three passes).
     *
     * @param readMiB how much matrix the bandwidth pass reads, MiB (a multiple of 64; several times the last-level
     *                cache)
     */
    public static Rates measure(int readMiB, long budgetNanos) {
        try (NDManager manager = NDManager.newBaseManager(EngineSetup.ENGINE);
             TorchScript stage = TorchScript.compileForCpu(manager, "Probe", "probe.py", false)) {
            int matrices = Math.max(1, readMiB / 64);
            double gbps = readGbps(manager, stage, matrices, budgetNanos);
            return new Rates(gbps, (long) matrices * SIDE * SIDE * Float.BYTES,
                    matmulGflops(manager, stage, budgetNanos), JniUtils.getNumThreads());
        }
    }

    private static double readGbps(NDManager manager, TorchScript stage, int matrices, long budgetNanos) {
        NDArray x = manager.randomUniform(-1, 1, new Shape(1, SIDE), DataType.FLOAT32);
        long best;
        try (NDManager plain = manager.newSubManager()) {
            NDArray[] weights = new NDArray[matrices];
            for (int i = 0; i < matrices; i++) {
                weights[i] = plain.randomUniform(-1, 1, new Shape(SIDE, SIDE), DataType.FLOAT32);
            }
            best = best(budgetNanos, () -> {
                for (NDArray w : weights) {
                    Linear.linear(x, w).close();
                }
            });
        }
        try (NDManager prepared = manager.newSubManager()) {
            StageWeights weights = new StageWeights(stage, prepared, WeightDtype.F32);
            for (int i = 0; i < matrices; i++) {
                weights.addProjection(prepared.randomUniform(-1, 1, new Shape(SIDE, SIDE), DataType.FLOAT32), null);
            }
            best = Math.min(best, bestProducts(stage, x, weights, budgetNanos));
        }
        return (double) matrices * SIDE * SIDE * Float.BYTES / best;
    }

    private static double matmulGflops(NDManager manager, TorchScript stage, long budgetNanos) {
        NDArray a = manager.randomUniform(-1, 1, new Shape(MATMUL, MATMUL), DataType.FLOAT32);
        NDArray b = manager.randomUniform(-1, 1, new Shape(MATMUL, MATMUL), DataType.FLOAT32);
        long best = best(budgetNanos, () -> a.matMul(b).close());
        try (NDManager prepared = manager.newSubManager()) {
            StageWeights weights = new StageWeights(stage, prepared, WeightDtype.F32);
            weights.addProjection(b.duplicate(), null);
            best = Math.min(best, bestProducts(stage, a, weights, budgetNanos));
        }
        return 2.0 * MATMUL * MATMUL * MATMUL / best;
    }

    /** The fastest pass of {@code x} times every prepared matrix, through the stage's projections. */
    private static long bestProducts(TorchScript stage, NDArray x, StageWeights weights, long budgetNanos) {
        try (IValue list = weights.toList(); ScriptArgs args = new ScriptArgs()) {
            IValue input = args.tensor(x);
            return best(budgetNanos, () -> stage.call("products", input, list).close());
        }
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
