package io.butterfly.worker.engine;

/**
 * What a quantized projection multiplies its weights with on the native kernels ({@code butterfly.worker.activations}):
 * the same choice on every worker of a cluster, since it is part of the model's math.
 */
public enum Activations {
    /**
     * Each input row rounded to 8 bits a block of 32 values at a time (a float scale per block) and multiplied by
     * integer dot products, as llama.cpp's CPU kernels do: a quantized step's products do a quarter of the work.
     * Logits differ from the float32 reference by the inputs' rounding (docs/models.md states the tolerance).
     */
    INT8,
    /** Float32 inputs (weight-only quantization): logits equal the float32 reference on the dequantized weights to a
     * few ulps of each operation. */
    F32
}
