package io.butterfly.worker.engine;

import java.util.Objects;

/**
 * Where and how a partition runs.
 *
 * @param device         "cpu", "gpu:N" or "auto" (the first GPU the engine reports, else the CPU)
 * @param threads        intra-op threads of the engine (process-wide); 0 keeps the engine default
 * @param kvCacheBytes   the most memory all sequences' KV caches may take together; 0 = no limit
 * @param batchInvariant whether a sequence's results must be bit for bit the same whatever it is batched with, by
 *                       padding every step's rows to the projections' {@link TorchScript.Linear#rowQuantum()} (1, no
 *                       padding, for oneDNN's, which are invariant anyway)
 * @param weightDtype    the precision projection weights are held in
 * @param profiled       whether the stage records libtorch profiler scopes per layer and operation ({@code butterfly
 *                       profile}); they cost a few microseconds each, so serving stages go without
 * @param kernels        which kernels a Llama-family stage on a CPU computes with
 * @param activations    what quantized projections on the native kernels multiply their weights with
 * @param experts        how a stage asks other workers for the sums of the expert groups they hold (null: it cannot,
 *                       and a partition whose experts are spread refuses to load)
 * @param prefixCaching  whether the stage keeps the KV of full blocks of prompts for later sequences that start alike
 *                       ({@link PrefixCache}); on by default
 * @param engineThread   the thread the partition loads and computes on: its worker's own ({@link EngineThread}); null
 *                       (the default): whichever thread asks, one at a time (a tool or a test computing from its own
 *                       thread)
 */
public record ExecutorOptions(String device, int threads, long kvCacheBytes, boolean batchInvariant, WeightDtype weightDtype,
                              boolean profiled, CpuKernels kernels, Activations activations, ExpertExchange experts,
                              boolean prefixCaching, EngineThread engineThread) {

    public ExecutorOptions {
        if (device == null || device.isBlank()) {
            device = "auto";
        }
        if (threads < 0) {
            throw new IllegalArgumentException("threads must be >= 0, got " + threads);
        }
        if (kvCacheBytes < 0) {
            throw new IllegalArgumentException("kvCacheBytes must be >= 0, got " + kvCacheBytes);
        }
        Objects.requireNonNull(weightDtype, "weightDtype");
        Objects.requireNonNull(kernels, "kernels");
        Objects.requireNonNull(activations, "activations");
    }

    /** Prefix caching on. */
    public ExecutorOptions(String device, int threads, long kvCacheBytes, boolean batchInvariant, WeightDtype weightDtype,
                           boolean profiled, CpuKernels kernels, Activations activations, ExpertExchange experts) {
        this(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels, activations, experts, true, null);
    }

    /** These options with prefix caching on or off. */
    public ExecutorOptions withPrefixCaching(boolean on) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels,
                activations, experts, on, engineThread);
    }

    /** These options, loads and forward passes run on {@code thread} ({@link #engineThread}). */
    public ExecutorOptions withEngineThread(EngineThread thread) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels,
                activations, experts, prefixCaching, thread);
    }

    /** No other worker's experts asked. */
    public ExecutorOptions(String device, int threads, long kvCacheBytes, boolean batchInvariant, WeightDtype weightDtype,
                           boolean profiled, CpuKernels kernels, Activations activations) {
        this(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels, activations, null);
    }

    /** These options, other workers' expert groups asked through {@code exchange}. */
    public ExecutorOptions withExperts(ExpertExchange exchange) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels,
                activations, exchange, prefixCaching, engineThread);
    }

    /** Not profiled, kernels chosen by the weights, 8-bit activations for quantized weights. */
    public ExecutorOptions(String device, int threads, long kvCacheBytes, boolean batchInvariant, WeightDtype weightDtype) {
        this(device, threads, kvCacheBytes, batchInvariant, weightDtype, false, CpuKernels.AUTO, Activations.INT8);
    }

    /** Float32 weights, not profiled. */
    public ExecutorOptions(String device, int threads, long kvCacheBytes, boolean batchInvariant) {
        this(device, threads, kvCacheBytes, batchInvariant, WeightDtype.F32);
    }

    /** Not batch-invariant, float32 weights. */
    public ExecutorOptions(String device, int threads, long kvCacheBytes) {
        this(device, threads, kvCacheBytes, false);
    }

    /** No limit on KV cache memory, not batch-invariant, float32 weights. */
    public ExecutorOptions(String device, int threads) {
        this(device, threads, 0);
    }

    public static ExecutorOptions cpu() {
        return new ExecutorOptions("cpu", 0);
    }

    /** These options with batch invariance on or off. */
    public ExecutorOptions withBatchInvariant(boolean on) {
        return new ExecutorOptions(device, threads, kvCacheBytes, on, weightDtype, profiled, kernels, activations, experts,
                prefixCaching, engineThread);
    }

    /** These options with weights held in {@code dtype}. */
    public ExecutorOptions withWeightDtype(WeightDtype dtype) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, dtype, profiled, kernels, activations, experts,
                prefixCaching, engineThread);
    }

    /** These options with a Llama-family stage on a CPU computing with {@code kernels}. */
    public ExecutorOptions withKernels(CpuKernels kernels) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels, activations, experts,
                prefixCaching, engineThread);
    }

    /** These options with quantized projections on the native kernels multiplying {@code activations}. */
    public ExecutorOptions withActivations(Activations activations) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, profiled, kernels, activations, experts,
                prefixCaching, engineThread);
    }

    /** These options with the stage's profiling scopes on or off. */
    public ExecutorOptions withProfiling(boolean on) {
        return new ExecutorOptions(device, threads, kvCacheBytes, batchInvariant, weightDtype, on, kernels, activations, experts,
                prefixCaching, engineThread);
    }
}
