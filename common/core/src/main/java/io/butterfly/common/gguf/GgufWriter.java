package io.butterfly.common.gguf;

import io.butterfly.common.quant.GgmlType;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes GGUF version 3 files ({@link GgufFile} reads them): the project's model generator and tests make the GGUF
 * files they load, and tools write a model for llama.cpp to run beside Butterfly. Tensors are streamed: each is given
 * with its size and a writer of its bytes, called in order, so no tensor need be held whole.
 */
public final class GgufWriter {

    /** Writes one tensor's bytes (exactly as many as its type and dimensions take) to {@code out}. */
    @FunctionalInterface
    public interface TensorBytes {
        void writeTo(OutputStream out) throws IOException;
    }

    private record Tensor(String name, GgmlType type, long[] dims, TensorBytes bytes) {
    }

    private final Map<String, GgufValue> metadata = new LinkedHashMap<>();
    private final List<Tensor> tensors = new ArrayList<>();

    public GgufWriter put(String key, GgufValue value) {
        metadata.put(key, value);
        return this;
    }

    /**
     * Adds a tensor.
     *
     * @param dims ggml's order: innermost (contiguous) dimension first
     */
    public GgufWriter tensor(String name, GgmlType type, long[] dims, TensorBytes bytes) {
        tensors.add(new Tensor(name, type, dims.clone(), bytes));
        return this;
    }

    /** Writes the file (through a temporary file beside it, moved into place once complete). */
    public void write(Path file) throws IOException {
        long alignment = GgufFile.DEFAULT_ALIGNMENT;
        GgufValue a = metadata.get(GgufFile.ALIGNMENT_KEY);
        if (a != null) {
            alignment = (long) a.value();
        }
        ByteArrayWriter header = new ByteArrayWriter();
        header.u32(GgufFile.MAGIC).u32(3).u64(tensors.size()).u64(metadata.size());
        for (Map.Entry<String, GgufValue> e : metadata.entrySet()) {
            header.string(e.getKey());
            header.value(e.getValue());
        }
        long offset = 0;
        List<Long> sizes = new ArrayList<>();
        for (Tensor t : tensors) {
            header.string(t.name()).u32(t.dims().length);
            for (long d : t.dims()) {
                header.u64(d);
            }
            long rows = 1;
            for (int i = 1; i < t.dims().length; i++) {
                rows *= t.dims()[i];
            }
            long size = t.type().rowBytes(t.dims()[0]) * rows;
            header.u32(t.type().id()).u64(offset);
            sizes.add(size);
            offset = GgufFile.alignUp(offset + size, alignment);
        }
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (OutputStream raw = Files.newOutputStream(tmp);
             CountingStream out = new CountingStream(new java.io.BufferedOutputStream(raw, 1 << 20))) {
            out.write(header.bytes());
            pad(out, alignment);
            for (int i = 0; i < tensors.size(); i++) {
                Tensor t = tensors.get(i);
                long before = out.count;
                t.bytes().writeTo(out);
                if (out.count - before != sizes.get(i)) {
                    throw new IllegalStateException("tensor '" + t.name() + "' wrote " + (out.count - before)
                            + " bytes, its type and dimensions take " + sizes.get(i));
                }
                pad(out, alignment);
            }
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    private static void pad(CountingStream out, long alignment) throws IOException {
        while (out.count % alignment != 0) {
            out.write(0);
        }
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

    /** The header, built in memory (metadata and tensor infos: megabytes at most). */
    private static final class ByteArrayWriter {
        private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);

        ByteArrayWriter u8(long v) {
            out.write((int) v);
            return this;
        }

        ByteArrayWriter u16(long v) {
            out.write(scratch.clear().putShort((short) v).array(), 0, 2);
            return this;
        }

        ByteArrayWriter u32(long v) {
            out.write(scratch.clear().putInt((int) v).array(), 0, 4);
            return this;
        }

        ByteArrayWriter u64(long v) {
            out.write(scratch.clear().putLong(v).array(), 0, 8);
            return this;
        }

        ByteArrayWriter string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            out.write(b, 0, b.length);
            return this;
        }

        void value(GgufValue v) {
            u32(v.type().id());
            if (v.type() == GgufValueType.ARRAY) {
                u32(v.elementType().id());
                u64(v.elements().size());
                for (Object e : v.elements()) {
                    scalar(v.elementType(), e);
                }
            } else {
                scalar(v.type(), v.value());
            }
        }

        private void scalar(GgufValueType type, Object v) {
            switch (type) {
                case UINT8, INT8 -> u8(((Number) v).longValue());
                case UINT16, INT16 -> u16(((Number) v).longValue());
                case UINT32, INT32 -> u32(((Number) v).longValue());
                case UINT64, INT64 -> u64(((Number) v).longValue());
                case FLOAT32 -> u32(Float.floatToRawIntBits(((Number) v).floatValue()));
                case FLOAT64 -> u64(Double.doubleToRawLongBits(((Number) v).doubleValue()));
                case BOOL -> u8((Boolean) v ? 1 : 0);
                case STRING -> string((String) v);
                case ARRAY -> throw new IllegalArgumentException("GGUF has no arrays of arrays");
            }
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }
}
