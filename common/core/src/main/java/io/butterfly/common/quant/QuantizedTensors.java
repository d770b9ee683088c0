package io.butterfly.common.quant;

import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import java.util.Optional;

/**
 * How a shard holds a tensor of ggml blocks: a plain safetensors entry of dtype {@code U8} and shape
 * {@code [rows, rowBytes]} (the blocks exactly as ggml lays them out, row after row), with its ggml type in the
 * file's {@code __metadata__} under {@code ggml_type.<tensor name>} (e.g. {@code "Q4_K"}). The file stays valid
 * safetensors for any reader; F16, BF16 and F32 tensors keep their own dtypes.
 */
public final class QuantizedTensors {

    /** The {@code __metadata__} key naming a tensor's ggml type is this prefix and the tensor's name. */
    public static final String TYPE_KEY_PREFIX = "ggml_type.";

    private QuantizedTensors() {
    }

    public static String typeKey(String tensor) {
        return TYPE_KEY_PREFIX + tensor;
    }

    /**
     * The tensor's type as stored: its ggml block type when the file names one, else its safetensors dtype (F32,
     * F16, BF16) as the ggml type of the same values.
     *
     * @throws IllegalArgumentException if the file names a ggml type that is unknown or does not fit the entry
     */
    public static GgmlType storedType(SafetensorsFile file, String tensor) {
        TensorInfo info = file.info(tensor);
        String named = file.metadata().get(typeKey(tensor));
        if (named == null) {
            return switch (info.dtype()) {
                case "F32" -> GgmlType.F32;
                case "F16" -> GgmlType.F16;
                case "BF16" -> GgmlType.BF16;
                default -> throw new IllegalArgumentException("tensor '" + tensor + "' is " + info.dtype()
                        + "; weights are F32, F16, BF16 or ggml blocks");
            };
        }
        GgmlType type = GgmlType.byName(named).filter(GgmlType::quantized).orElseThrow(() -> new IllegalArgumentException(
                "tensor '" + tensor + "' is of ggml type '" + named + "', which is not a block type"));
        if (!info.dtype().equals("U8") || info.shape().length != 2 || info.shape()[1] % type.blockBytes() != 0) {
            throw new IllegalArgumentException("tensor '" + tensor + "' of ggml type " + type + " must be stored as U8"
                    + " [rows, whole blocks of " + type.blockBytes() + " bytes], not " + info.dtype()
                    + java.util.Arrays.toString(info.shape()));
        }
        return type;
    }

    /** The tensor's shape as values: {@code [rows, columns]} for ggml blocks, the stored shape otherwise. */
    public static long[] logicalShape(SafetensorsFile file, String tensor) {
        TensorInfo info = file.info(tensor);
        GgmlType type = storedType(file, tensor);
        if (!type.quantized()) {
            return info.shape();
        }
        long[] s = info.shape();
        return new long[]{s[0], s[1] / type.blockBytes() * type.blockSize()};
    }

    /** The safetensors shape that holds {@code rows} rows of {@code columns} values of a block type. */
    public static long[] storedShape(GgmlType type, long rows, long columns) {
        return new long[]{rows, type.rowBytes(columns)};
    }

    /** The ggml type a tensor of this safetensors file names, if it names one. */
    public static Optional<GgmlType> blockType(SafetensorsFile file, String tensor) {
        GgmlType t = storedType(file, tensor);
        return t.quantized() ? Optional.of(t) : Optional.empty();
    }
}
