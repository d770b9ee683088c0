package io.butterfly.common.gguf;

import io.butterfly.common.quant.GgmlType;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Read access to a GGUF file (versions 2 and 3, little-endian), the format llama.cpp's models are shipped in: the
 * metadata, the tensors' descriptions, and each tensor's bytes read in place, in chunks of the caller's size (never a
 * whole tensor on the heap).
 *
 * <p>Layout: {@code "GGUF"}, version (u32), tensor count (u64), metadata count (u64), the metadata (key string, type
 * u32, value), the tensor infos (name, dimension count u32, dimensions u64 innermost first, ggml type u32, offset u64
 * from the data section), then, aligned to {@code general.alignment} (32 unless given), the data section. Strings are
 * a u64 length and UTF-8 bytes.
 *
 * <p>The header is checked before anything is used: counts, lengths and dimensions within what the file can hold,
 * known value types, UTF-8 strings, no key or tensor name twice, every tensor of a known ggml type with whole blocks
 * per row, aligned, inside the data section and overlapping none other. A file that breaks any of this is refused
 * with {@link InvalidGgufException} naming what is wrong, whatever its bytes.
 */
public final class GgufFile implements AutoCloseable {

    public static final String ALIGNMENT_KEY = "general.alignment";
    static final int MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
    static final int DEFAULT_ALIGNMENT = 32;
    /** No real model has this many tensors or metadata entries; a count beyond them is a broken file. */
    private static final long MAX_ENTRIES = 1L << 20;
    private static final int MAX_DIMS = 4;

    private final Path path;
    private final FileChannel channel;
    private final int version;
    private final Map<String, GgufValue> metadata;
    private final Map<String, GgufTensor> tensors;
    private final long dataStart;

    private GgufFile(Path path, FileChannel channel, int version, Map<String, GgufValue> metadata,
                     Map<String, GgufTensor> tensors, long dataStart) {
        this.path = path;
        this.channel = channel;
        this.version = version;
        this.metadata = metadata;
        this.tensors = tensors;
        this.dataStart = dataStart;
    }

    public static GgufFile open(Path path) throws IOException {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.READ);
        try {
            return read(path, channel);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static GgufFile read(Path path, FileChannel channel) throws IOException {
        HeaderReader in = new HeaderReader(path, channel);
        if (in.u32() != MAGIC) {
            throw new InvalidGgufException(path + " is not a GGUF file (no GGUF magic)");
        }
        long version = in.u32();
        if (version != 2 && version != 3) {
            throw new InvalidGgufException(path + " is GGUF version " + version + "; versions 2 and 3 are read");
        }
        long tensorCount = in.count("tensor count");
        long metadataCount = in.count("metadata count");
        Map<String, GgufValue> metadata = new LinkedHashMap<>();
        for (long i = 0; i < metadataCount; i++) {
            String key = in.string();
            GgufValue value = in.value(key);
            if (metadata.put(key, value) != null) {
                throw new InvalidGgufException(path + ": metadata key '" + key + "' is given twice");
            }
        }
        long alignment = DEFAULT_ALIGNMENT;
        GgufValue a = metadata.get(ALIGNMENT_KEY);
        if (a != null) {
            if (a.type() != GgufValueType.UINT32 || (long) a.value() == 0 || Long.bitCount((long) a.value()) != 1) {
                throw new InvalidGgufException(path + ": " + ALIGNMENT_KEY + " must be a power of two (u32), was " + a.value());
            }
            alignment = (long) a.value();
        }
        List<long[]> raw = new ArrayList<>();
        List<String> names = new ArrayList<>();
        List<Long> typeIds = new ArrayList<>();
        for (long i = 0; i < tensorCount; i++) {
            String name = in.string();
            long nDims = in.u32();
            if (nDims < 1 || nDims > MAX_DIMS) {
                throw new InvalidGgufException(path + ": tensor '" + name + "' has " + nDims + " dimensions (1 to "
                        + MAX_DIMS + ")");
            }
            long[] dims = new long[(int) nDims];
            for (int d = 0; d < nDims; d++) {
                dims[d] = in.u64();
                if (dims[d] <= 0 || dims[d] > channel.size() * 8) {
                    throw new InvalidGgufException(path + ": tensor '" + name + "' has dimension " + Long.toUnsignedString(dims[d]));
                }
            }
            typeIds.add(in.u32());
            long offset = in.u64();
            names.add(name);
            raw.add(concat(dims, offset));
        }
        long dataStart = alignUp(in.position(), alignment);
        long dataSize = channel.size() - dataStart;
        if (dataSize < 0) {
            throw new InvalidGgufException(path + ": ends before its data section");
        }
        Map<String, GgufTensor> tensors = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            long typeId = typeIds.get(i);
            long[] r = raw.get(i);
            long[] dims = java.util.Arrays.copyOf(r, r.length - 1);
            long offset = r[r.length - 1];
            GgmlType type = GgmlType.byId(typeId).orElseThrow(() -> new InvalidGgufException(path + ": tensor '"
                    + name + "' has ggml type " + typeId + ", which ggml does not define"));
            long bytes;
            try {
                long rows = 1;
                for (int d = 1; d < dims.length; d++) {
                    rows = Math.multiplyExact(rows, dims[d]);
                }
                bytes = Math.multiplyExact(type.rowBytes(dims[0]), rows);
            } catch (ArithmeticException | IllegalArgumentException e) {
                throw new InvalidGgufException(path + ": tensor '" + name + "' " + type + java.util.Arrays.toString(dims)
                        + ": " + e.getMessage());
            }
            if (offset < 0 || offset % alignment != 0 || offset > dataSize || bytes > dataSize - offset) {
                throw new InvalidGgufException(path + ": tensor '" + name + "' of " + bytes + " bytes at offset "
                        + Long.toUnsignedString(offset) + " is not aligned inside a data section of " + dataSize + " bytes");
            }
            if (tensors.put(name, new GgufTensor(name, type, dims, dataStart + offset, bytes)) != null) {
                throw new InvalidGgufException(path + ": tensor '" + name + "' is described twice");
            }
        }
        List<GgufTensor> sorted = new ArrayList<>(tensors.values());
        sorted.sort(Comparator.comparingLong(GgufTensor::offset));
        for (int i = 1; i < sorted.size(); i++) {
            GgufTensor prev = sorted.get(i - 1);
            if (sorted.get(i).offset() < prev.offset() + prev.bytes()) {
                throw new InvalidGgufException(path + ": tensors '" + prev.name() + "' and '" + sorted.get(i).name() + "' overlap");
            }
        }
        return new GgufFile(path, channel, (int) version, Collections.unmodifiableMap(metadata),
                Collections.unmodifiableMap(tensors), dataStart);
    }

    private static long[] concat(long[] dims, long offset) {
        long[] r = java.util.Arrays.copyOf(dims, dims.length + 1);
        r[dims.length] = offset;
        return r;
    }

    static long alignUp(long position, long alignment) {
        return (position + alignment - 1) / alignment * alignment;
    }

    public Path path() {
        return path;
    }

    public int version() {
        return version;
    }

    /** The metadata, in file order. */
    public Map<String, GgufValue> metadata() {
        return metadata;
    }

    /** The tensors, in file order. */
    public Map<String, GgufTensor> tensors() {
        return tensors;
    }

    public Optional<GgufTensor> tensor(String name) {
        return Optional.ofNullable(tensors.get(name));
    }

    /** Where the data section starts. */
    public long dataStart() {
        return dataStart;
    }

    /** A string value, if the key is there and holds one. */
    public Optional<String> string(String key) {
        GgufValue v = metadata.get(key);
        return v != null && v.type() == GgufValueType.STRING ? Optional.of((String) v.value()) : Optional.empty();
    }

    /** An integer value (any integer type), if the key is there and holds one. */
    public Optional<Long> integer(String key) {
        GgufValue v = metadata.get(key);
        return v != null && v.value() instanceof Long l ? Optional.of(l) : Optional.empty();
    }

    /** A number (integer or float), if the key is there and holds one. */
    public Optional<Double> number(String key) {
        GgufValue v = metadata.get(key);
        if (v == null) {
            return Optional.empty();
        }
        if (v.value() instanceof Long l) {
            return Optional.of(l.doubleValue());
        }
        return v.value() instanceof Double d ? Optional.of(d) : Optional.empty();
    }

    public Optional<Boolean> bool(String key) {
        GgufValue v = metadata.get(key);
        return v != null && v.value() instanceof Boolean b ? Optional.of(b) : Optional.empty();
    }

    /** An array's elements, if the key is there and holds an array. */
    public Optional<List<?>> array(String key) {
        GgufValue v = metadata.get(key);
        return v != null && v.type() == GgufValueType.ARRAY ? Optional.of(v.elements()) : Optional.empty();
    }

    /**
     * Reads bytes {@code [from, from + dst.remaining())} of the tensor into {@code dst}, advancing it: a caller streams
     * a large tensor through a buffer of its own size.
     */
    public void read(GgufTensor tensor, long from, ByteBuffer dst) throws IOException {
        if (from < 0 || from + dst.remaining() > tensor.bytes()) {
            throw new IllegalArgumentException("bytes [" + from + ", " + (from + dst.remaining()) + ") are outside "
                    + tensor + " (" + tensor.bytes() + " bytes)");
        }
        long pos = tensor.offset() + from;
        while (dst.hasRemaining()) {
            int n = channel.read(dst, pos);
            if (n < 0) {
                throw new EOFException(path + " ended inside tensor '" + tensor.name() + "'");
            }
            pos += n;
        }
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    /** Reads the header sequentially through a buffer, checking every length against what is left of the file. */
    private static final class HeaderReader {
        private static final int BUFFER = 1 << 16;
        private final Path path;
        private final FileChannel channel;
        private final long size;
        private final ByteBuffer buf = ByteBuffer.allocate(BUFFER).order(ByteOrder.LITTLE_ENDIAN);
        private long bufferStart;

        HeaderReader(Path path, FileChannel channel) throws IOException {
            this.path = path;
            this.channel = channel;
            this.size = channel.size();
            buf.limit(0);
        }

        long position() {
            return bufferStart + buf.position();
        }

        private void need(int n) throws IOException {
            if (buf.remaining() >= n) {
                return;
            }
            if (position() + n > size) {
                throw new InvalidGgufException(path + " ends inside its header (at byte " + position() + ")");
            }
            long pos = position();
            buf.clear();
            while (buf.position() < n) {
                int read = channel.read(buf, pos + buf.position());
                if (read < 0) {
                    throw new InvalidGgufException(path + " ends inside its header");
                }
            }
            buf.flip();
            bufferStart = pos;
        }

        long u32() throws IOException {
            need(4);
            return buf.getInt() & 0xFFFFFFFFL;
        }

        long u64() throws IOException {
            need(8);
            return buf.getLong();
        }

        long count(String what) throws IOException {
            long n = u64();
            if (n < 0 || n > MAX_ENTRIES) {
                throw new InvalidGgufException(path + ": " + what + " " + Long.toUnsignedString(n) + " is more than "
                        + MAX_ENTRIES);
            }
            return n;
        }

        String string() throws IOException {
            long len = u64();
            if (len < 0 || len > size - position()) {
                throw new InvalidGgufException(path + ": a string of " + Long.toUnsignedString(len) + " bytes at byte "
                        + position() + " is longer than the rest of the file");
            }
            byte[] bytes = new byte[(int) Math.min(len, Integer.MAX_VALUE - 8)];
            if (bytes.length != len) {
                throw new InvalidGgufException(path + ": a string of " + len + " bytes is too long");
            }
            int done = 0;
            while (done < bytes.length) {
                need(1);
                int n = Math.min(buf.remaining(), bytes.length - done);
                buf.get(bytes, done, n);
                done += n;
            }
            try {
                return StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(bytes)).toString();
            } catch (CharacterCodingException e) {
                throw new InvalidGgufException(path + ": a string at byte " + (position() - len) + " is not UTF-8");
            }
        }

        GgufValue value(String key) throws IOException {
            GgufValueType type = type(key);
            if (type != GgufValueType.ARRAY) {
                return GgufValue.of(type, scalar(type, key));
            }
            GgufValueType element = type(key);
            if (element == GgufValueType.ARRAY) {
                throw new InvalidGgufException(path + ": metadata '" + key + "' is an array of arrays");
            }
            long count = u64();
            long least = element == GgufValueType.STRING ? 8 : element.size();
            if (count < 0 || count > (size - position()) / least) {
                throw new InvalidGgufException(path + ": metadata '" + key + "' claims " + Long.toUnsignedString(count)
                        + " elements, more than the rest of the file holds");
            }
            List<Object> elements = new ArrayList<>((int) Math.min(count, 1 << 20));
            for (long i = 0; i < count; i++) {
                elements.add(scalar(element, key));
            }
            return new GgufValue(GgufValueType.ARRAY, element, Collections.unmodifiableList(elements));
        }

        private GgufValueType type(String key) throws IOException {
            long id = u32();
            return GgufValueType.byId(id).orElseThrow(() -> new InvalidGgufException(path + ": metadata '" + key
                    + "' has value type " + id + ", which GGUF does not define"));
        }

        private Object scalar(GgufValueType type, String key) throws IOException {
            return switch (type) {
                case UINT8 -> {
                    need(1);
                    yield (long) (buf.get() & 0xFF);
                }
                case INT8 -> {
                    need(1);
                    yield (long) buf.get();
                }
                case UINT16 -> {
                    need(2);
                    yield (long) (buf.getShort() & 0xFFFF);
                }
                case INT16 -> {
                    need(2);
                    yield (long) buf.getShort();
                }
                case UINT32 -> u32();
                case INT32 -> {
                    need(4);
                    yield (long) buf.getInt();
                }
                case UINT64, INT64 -> u64();
                case FLOAT32 -> {
                    need(4);
                    yield (double) buf.getFloat();
                }
                case FLOAT64 -> {
                    need(8);
                    yield buf.getDouble();
                }
                case BOOL -> {
                    need(1);
                    byte b = buf.get();
                    if (b != 0 && b != 1) {
                        throw new InvalidGgufException(path + ": metadata '" + key + "' holds bool " + b);
                    }
                    yield b == 1;
                }
                case STRING -> string();
                case ARRAY -> throw new IllegalStateException("arrays are read by value()");
            };
        }
    }
}
