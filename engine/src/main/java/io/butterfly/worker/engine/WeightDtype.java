package io.butterfly.worker.engine;

/**
 * The precision a partition keeps its projection weights in ({@code butterfly.worker.weight-dtype}). Checkpoints in
 * F32, F16 or BF16 load into any of them: widened exactly to float32 first, then rounded to half precision if asked.
 * Norms, biases, embeddings, activations and KV caches stay float32.
 */
public enum WeightDtype {

    /** Float32 weights (the default): results match Hugging Face transformers in float32. */
    F32(6, 4),
    /** IEEE half precision: half the memory; a projection's input is rounded to float16, accumulation in float32. */
    F16(5, 2),
    /** bfloat16: half the memory; a projection's input is rounded to bfloat16, accumulation in float32. */
    BF16(15, 2);

    private final int torchCode;
    private final int bytes;

    WeightDtype(int torchCode, int bytes) {
        this.torchCode = torchCode;
        this.bytes = bytes;
    }

    /** The dtype's number in libtorch ({@code c10::ScalarType}). */
    int torchCode() {
        return torchCode;
    }

    /** Bytes of one weight. */
    public int bytes() {
        return bytes;
    }

    public boolean half() {
        return this != F32;
    }
}
