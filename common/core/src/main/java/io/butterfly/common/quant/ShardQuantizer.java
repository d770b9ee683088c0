package io.butterfly.common.quant;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * Writes safetensors files whose matrices are quantized as a {@link WeightQuantization} says, the others copied as
 * they are, every tensor streamed from its source (no tensor held whole).
 */
public final class ShardQuantizer {

    private ShardQuantizer() {
    }

    /** A tensor to write: its name and the file it comes from. */
    public record Source(String name, SafetensorsFile file) {
    }

    /**
     * Writes {@code tensors} to {@code out}, quantizing each matrix as {@code quantization} (null: none) says for a
     * model of {@code config}.
     *
     * @return the ggml type each quantized tensor got
     */
    public static Map<String, GgmlType> write(Path out, List<Source> tensors, WeightQuantization quantization,
                                              ModelConfig config) throws IOException {
        List<SafetensorsWriter.StreamedEntry> entries = new ArrayList<>(tensors.size());
        Map<String, String> metadata = new TreeMap<>();
        Map<String, GgmlType> types = new TreeMap<>();
        for (Source t : tensors) {
            TensorInfo info = t.file().info(t.name());
            Optional<GgmlType> target = quantization == null ? Optional.empty()
                    : quantization.typeOf(t.name(), info.shape(), config);
            Optional<GgmlType> stored = QuantizedTensors.blockType(t.file(), t.name());
            if (stored.isPresent()) {
                // Already blocks (a GGUF import, or a re-import): kept as they are, never quantized twice.
                entries.add(copy(t.file(), info));
                metadata.put(QuantizedTensors.typeKey(t.name()), stored.get().name());
                types.put(t.name(), stored.get());
            } else if (target.isPresent()) {
                entries.add(TensorQuantizer.entry(t.file(), t.name(), target.get()));
                metadata.put(QuantizedTensors.typeKey(t.name()), target.get().name());
                types.put(t.name(), target.get());
            } else {
                entries.add(copy(t.file(), info));
            }
        }
        SafetensorsWriter.writeStreamed(out, entries, metadata);
        return types;
    }

    /** An entry copying a tensor's stored bytes through a buffer of a megabyte. */
    public static SafetensorsWriter.StreamedEntry copy(SafetensorsFile file, TensorInfo info) {
        return new SafetensorsWriter.StreamedEntry(info.name(), info.dtype(), info.shape(), info.byteLength(), out -> {
            java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate((int) Math.min(1 << 20, Math.max(1, info.byteLength())));
            for (long at = 0; at < info.byteLength(); at += buf.capacity()) {
                buf.clear().limit((int) Math.min(buf.capacity(), info.byteLength() - at));
                file.readRange(info.name(), at, buf);
                out.write(buf.array(), 0, buf.position());
            }
        });
    }
}
