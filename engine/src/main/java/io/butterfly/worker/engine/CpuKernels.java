package io.butterfly.worker.engine;

/**
 * Which kernels a Llama-family stage on a CPU computes with ({@code butterfly.worker.kernels}).
 */
public enum CpuKernels {
    /**
     * The native kernels for a stage with quantized or float32 weights (a row's bits then do not depend on the rows
     * sharing its step, so prefill chunks give the bits of single steps); libtorch's (TorchScript) for half-precision
     * weights, for what the kernels do not compute (experts, q/k norms, a refused shape), and where they are missing.
     */
    AUTO,
    /** The native kernels for every Llama-family stage (float32, half precision and quantized weights alike). */
    NATIVE,
    /** libtorch's for every stage; quantized weights are dequantized to float32 at load (the reference math). */
    TORCH
}
