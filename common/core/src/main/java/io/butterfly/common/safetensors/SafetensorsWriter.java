package io.butterfly.common.safetensors;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes safetensors files (header via Jackson, then the tensors' bytes in order). Used by the model
 * generator and the registry's per-layer repackaging; DJL's decoder reads the result (tested).
 *
 * <p>The bytes are a pure function of the entries: header keys in a fixed order (tensors as given,
 * fields dtype/shape/data_offsets, metadata sorted), so re-importing a model reproduces every shard's
 * SHA-256 and the manifest's Merkle root.
 */
public final class SafetensorsWriter {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A tensor to write: dtype string, shape and little-endian bytes. */
    public record Entry(String name, String dtype, long[] shape, ByteBuffer data) {

        public static Entry float32(String name, long[] shape, float[] values) {
            ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            b.asFloatBuffer().put(values);
            return new Entry(name, "F32", shape, b);
        }
    }

    /**
     * A tensor whose bytes are written when its turn comes, so that no tensor need be held whole: a large tensor is
     * copied or quantized from its source through a small buffer.
     */
    public record StreamedEntry(String name, String dtype, long[] shape, long byteLength, TensorBytes bytes) {
    }

    /** Writes exactly a tensor's bytes to {@code out}. */
    @FunctionalInterface
    public interface TensorBytes {
        void writeTo(OutputStream out) throws IOException;
    }

    private SafetensorsWriter() {
    }

    public static void write(Path file, List<Entry> entries, Map<String, String> metadata) throws IOException {
        List<StreamedEntry> streamed = new ArrayList<>(entries.size());
        for (Entry e : entries) {
            ByteBuffer data = e.data();
            streamed.add(new StreamedEntry(e.name(), e.dtype(), e.shape(), data.remaining(), out -> {
                ByteBuffer d = data.duplicate();
                byte[] chunk = new byte[1 << 16];
                while (d.hasRemaining()) {
                    int n = Math.min(chunk.length, d.remaining());
                    d.get(chunk, 0, n);
                    out.write(chunk, 0, n);
                }
            }));
        }
        writeStreamed(file, streamed, metadata);
    }

    /** Writes the file, each tensor's bytes produced in order by its entry. */
    public static void writeStreamed(Path file, List<StreamedEntry> entries, Map<String, String> metadata) throws IOException {
        Map<String, Object> header = new LinkedHashMap<>();
        if (metadata != null && !metadata.isEmpty()) {
            header.put("__metadata__", new TreeMap<>(metadata));
        }
        long offset = 0;
        for (StreamedEntry e : entries) {
            long len = e.byteLength();
            long[] shape = e.shape();
            List<Long> dims = new ArrayList<>(shape.length);
            for (long d : shape) {
                dims.add(d);
            }
            long expected = TensorInfo.elementSize(e.dtype());
            for (long d : shape) {
                expected *= d;
            }
            if (expected != len) {
                throw new IllegalArgumentException(e.name() + ": " + len + " bytes do not match " + e.dtype() + dims);
            }
            Map<String, Object> info = new LinkedHashMap<>();
            info.put("dtype", e.dtype());
            info.put("shape", dims);
            info.put("data_offsets", List.of(offset, offset + len));
            header.put(e.name(), info);
            offset += len;
        }
        byte[] json = JSON.writeValueAsString(header).getBytes(StandardCharsets.UTF_8);
        // Pad the header with spaces so the data section starts 8-byte aligned, as the reference writer does.
        int padded = (json.length + 7) / 8 * 8;
        byte[] headerBytes = new byte[padded];
        System.arraycopy(json, 0, headerBytes, 0, json.length);
        for (int i = json.length; i < padded; i++) {
            headerBytes[i] = ' ';
        }
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (OutputStream raw = Files.newOutputStream(tmp);
             CountingStream out = new CountingStream(new java.io.BufferedOutputStream(raw, 1 << 16))) {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(padded);
            out.write(len.array());
            out.write(headerBytes);
            for (StreamedEntry e : entries) {
                long before = out.count;
                e.bytes().writeTo(out);
                if (out.count - before != e.byteLength()) {
                    throw new IllegalStateException("tensor '" + e.name() + "' wrote " + (out.count - before)
                            + " bytes, its entry says " + e.byteLength());
                }
            }
        }
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    private static final class CountingStream extends java.io.FilterOutputStream {
        private long count;

        CountingStream(OutputStream out) {
            super(out);
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            count += len;
        }
    }
}
