package io.butterfly.worker.engine;

/**
 * Which kernels a Llama-family stage on a CPU computes with ({@code butterfly.worker.kernels}).
 */
public enum CpuKernels {
    /** The native kernels for a stage with quantized weights, libtorch's (TorchScript, oneDNN) for float32 ones. */
    AUTO,
    /** The native kernels for every Llama-family stage (float32, half precision and quantized weights alike). */
    NATIVE,
    /** libtorch's for every stage; quantized weights are dequantized to float32 at load (the reference math). */
    TORCH
}
