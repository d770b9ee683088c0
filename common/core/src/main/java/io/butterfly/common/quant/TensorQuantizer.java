package io.butterfly.common.quant;

import io.butterfly.common.safetensors.FloatWidening;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Quantizes a matrix of a safetensors file (F32, F16 or BF16, {@code [rows, columns]}) into ggml blocks, row by row
 * through buffers of a few megabytes: a tensor larger than the heap quantizes in the same memory as a small one.
 */
public final class TensorQuantizer {

    private static final int CHUNK_BYTES = 4 << 20;

    private TensorQuantizer() {
    }

    /** The shard entry holding {@code name} of {@code source} quantized to {@code type} (see {@link QuantizedTensors}). */
    public static SafetensorsWriter.StreamedEntry entry(SafetensorsFile source, String name, GgmlType type) {
        TensorInfo info = source.info(name);
        long[] shape = info.shape();
        if (shape.length != 2) {
            throw new IllegalArgumentException("only matrices are quantized, not " + info);
        }
        long[] stored = QuantizedTensors.storedShape(type, shape[0], shape[1]);
        return new SafetensorsWriter.StreamedEntry(name, "U8", stored, stored[0] * stored[1],
                out -> quantize(source, name, type, out));
    }

    private static void quantize(SafetensorsFile source, String name, GgmlType type, java.io.OutputStream out)
            throws IOException {
        TensorInfo info = source.info(name);
        int cols = Math.toIntExact(info.shape()[1]);
        long rows = info.shape()[0];
        int elementBytes = TensorInfo.elementSize(info.dtype());
        long sourceRowBytes = (long) cols * elementBytes;
        int rowsPerChunk = (int) Math.max(1, CHUNK_BYTES / sourceRowBytes);
        ByteBuffer in = ByteBuffer.allocate(Math.toIntExact(rowsPerChunk * sourceRowBytes)).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer quantized = ByteBuffer.allocate(Math.toIntExact(rowsPerChunk * type.rowBytes(cols)))
                .order(ByteOrder.LITTLE_ENDIAN);
        for (long r = 0; r < rows; r += rowsPerChunk) {
            int n = (int) Math.min(rowsPerChunk, rows - r);
            in.clear().limit(Math.toIntExact(n * sourceRowBytes));
            source.readRange(name, r * sourceRowBytes, in);
            in.flip();
            float[] values = FloatWidening.toFloat32(info.dtype(), in);
            quantized.clear();
            for (int i = 0; i < n; i++) {
                GgmlQuants.quantize(type, values, i * cols, cols, quantized);
            }
            out.write(quantized.array(), 0, quantized.position());
        }
    }
}
