package io.butterfly.common.safetensors;

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
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Read access to a safetensors file: the header (JSON, read with Jackson) and each tensor's bytes.
 *
 * <p>The registry repackages byte ranges into per-layer shards with it, and the worker reads each tensor it needs
 * straight into engine memory (DJL's own decoder reads a whole file into one array and aborts on BF16, which is
 * widened here to float32: docs/models.md). The header is validated before use: it is UTF-8 JSON, every range lies
 * inside the file, matches its dtype and shape, ranges do not overlap, no name is given twice, and
 * {@code __metadata__} maps strings to strings. A file that breaks the format is refused with
 * {@link InvalidSafetensorsException}, whatever its bytes (fuzzed: docs/testing.md).
 */
public final class SafetensorsFile implements AutoCloseable {

    /** Headers beyond this are refused (the format's reference implementation uses 100 MB). */
    static final long MAX_HEADER_BYTES = 100L * 1024 * 1024;
    /** A key given twice (a tensor, or a tensor's field) is refused: which entry counts would depend on the reader. */
    private static final JsonMapper JSON = JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private final Path path;
    private final FileChannel channel;
    private final long dataStart;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;

    private SafetensorsFile(Path path, FileChannel channel, long dataStart,
                            Map<String, TensorInfo> tensors, Map<String, String> metadata) {
        this.path = path;
        this.channel = channel;
        this.dataStart = dataStart;
        this.tensors = tensors;
        this.metadata = metadata;
    }

    public static SafetensorsFile open(Path path) throws IOException {
        return open(path, FileChannel.open(path, StandardOpenOption.READ));
    }

    /**
     * Reads through {@code channel}, already open on {@code path} (e.g. the channel a file's checksum was verified
     * through, so that what is read is what was checked). The file owns the channel from here: closing the file,
     * or failing to open it, closes the channel.
     */
    public static SafetensorsFile open(Path path, FileChannel channel) throws IOException {
        try {
            return read(path, channel);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static SafetensorsFile read(Path path, FileChannel channel) throws IOException {
        long fileSize = channel.size();
        if (fileSize < 8) {
            throw new InvalidSafetensorsException(path + ": shorter than the 8-byte header length");
        }
        ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, lenBuf, 0);
        long headerLen = lenBuf.flip().getLong();
        if (headerLen <= 0 || headerLen > MAX_HEADER_BYTES || 8 + headerLen > fileSize) {
            throw new InvalidSafetensorsException(path + ": header length " + headerLen + " is invalid for a file of " + fileSize + " bytes");
        }
        ByteBuffer header = ByteBuffer.allocate((int) headerLen);
        readFully(channel, header, 8);
        JsonNode root;
        try {
            // A decoder of its own reports malformed UTF-8 (the format's header is UTF-8) instead of replacing it.
            root = JSON.readTree(StandardCharsets.UTF_8.newDecoder().decode(header.flip()).toString());
        } catch (CharacterCodingException e) {
            throw new InvalidSafetensorsException(path + ": header is not UTF-8");
        } catch (JacksonException e) {
            throw new InvalidSafetensorsException(path + ": header is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new InvalidSafetensorsException(path + ": header is not a JSON object");
        }
        long dataStart = 8 + headerLen;
        long dataSize = fileSize - dataStart;
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Map.Entry<String, JsonNode> e : root.properties()) {
            requireUnicode(path, e.getKey());
            if (e.getKey().equals("__metadata__")) {
                readMetadata(path, e.getValue(), metadata);
                continue;
            }
            tensors.put(e.getKey(), tensorInfo(path, e.getKey(), e.getValue(), dataSize));
        }
        checkNoOverlap(path, tensors.values());
        return new SafetensorsFile(path, channel, dataStart, Collections.unmodifiableMap(tensors),
                Collections.unmodifiableMap(metadata));
    }

    /** {@code __metadata__} is a map of strings to strings, as the format's reference implementation reads it. */
    private static void readMetadata(Path path, JsonNode node, Map<String, String> metadata) {
        if (!node.isObject()) {
            throw new InvalidSafetensorsException(path + ": __metadata__ is not an object of strings");
        }
        for (Map.Entry<String, JsonNode> m : node.properties()) {
            if (!m.getValue().isString()) {
                throw new InvalidSafetensorsException(path + ": __metadata__ '" + m.getKey() + "' is not a string");
            }
            requireUnicode(path, m.getKey());
            requireUnicode(path, m.getValue().stringValue());
            metadata.put(m.getKey(), m.getValue().stringValue());
        }
    }

    /**
     * JSON's {@code \uD800} escapes can spell half a character, which UTF-8 cannot hold: a name with one could not be
     * written back (the registry's shards would name another tensor), and the reference implementation refuses it.
     */
    private static void requireUnicode(Path path, String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new InvalidSafetensorsException(path + ": header holds a string with half a character (a lone"
                        + " surrogate at index " + i + ")");
            }
        }
    }

    /** A JSON integer as a long; -1 for anything else ("12", 2.7 or true are not sizes). */
    private static long integer(JsonNode n) {
        return n.isIntegralNumber() && n.canConvertToLong() ? n.asLong() : -1;
    }

    private static TensorInfo tensorInfo(Path path, String name, JsonNode n, long dataSize) {
        JsonNode offsets = n.get("data_offsets");
        JsonNode shapeNode = n.get("shape");
        JsonNode dtypeNode = n.get("dtype");
        if (offsets == null || !offsets.isArray() || offsets.size() != 2 || shapeNode == null
                || !shapeNode.isArray() || dtypeNode == null || !dtypeNode.isString()) {
            throw new InvalidSafetensorsException(path + ": tensor '" + name + "' needs dtype, shape and data_offsets");
        }
        long[] shape = new long[shapeNode.size()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = integer(shapeNode.get(i));
            if (shape[i] < 0) {
                throw new InvalidSafetensorsException(path + ": tensor '" + name + "' has a dimension that is not a"
                        + " non-negative integer: " + shapeNode.get(i));
            }
        }
        TensorInfo info;
        try {
            info = new TensorInfo(name, dtypeNode.asString(), shape, integer(offsets.get(0)), integer(offsets.get(1)));
            long expected = Math.multiplyExact(info.numElements(), (long) TensorInfo.elementSize(info.dtype()));
            if (info.begin() < 0 || info.end() < info.begin() || info.end() > dataSize || info.byteLength() != expected) {
                throw new InvalidSafetensorsException(path + ": tensor '" + name + "' has data_offsets [" + info.begin()
                        + ", " + info.end() + ") that do not fit " + info + " in a data section of " + dataSize + " bytes");
            }
        } catch (ArithmeticException | IllegalArgumentException e) {
            if (e instanceof InvalidSafetensorsException ise) {
                throw ise;
            }
            throw new InvalidSafetensorsException(path + ": tensor '" + name + "': " + e.getMessage());
        }
        return info;
    }

    private static void checkNoOverlap(Path path, java.util.Collection<TensorInfo> infos) {
        List<TensorInfo> sorted = new ArrayList<>(infos);
        sorted.sort(Comparator.comparingLong(TensorInfo::begin));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).begin() < sorted.get(i - 1).end()) {
                throw new InvalidSafetensorsException(path + ": tensors '" + sorted.get(i - 1).name() + "' and '"
                        + sorted.get(i).name() + "' overlap");
            }
        }
    }

    private static void readFully(FileChannel channel, ByteBuffer buf, long position) throws IOException {
        long pos = position;
        while (buf.hasRemaining()) {
            int n = channel.read(buf, pos);
            if (n < 0) {
                throw new InvalidSafetensorsException("unexpected end of file at byte " + pos);
            }
            pos += n;
        }
    }

    public Path path() {
        return path;
    }

    /** Tensors in header order. */
    public Map<String, TensorInfo> tensors() {
        return tensors;
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    public TensorInfo info(String name) {
        TensorInfo info = tensors.get(name);
        if (info == null) {
            throw new IllegalArgumentException(path + " has no tensor '" + name + "'");
        }
        return info;
    }

    /** The tensor's stored bytes (little-endian), as a heap buffer. */
    public ByteBuffer rawBytes(String name) throws IOException {
        TensorInfo info = info(name);
        if (info.byteLength() > Integer.MAX_VALUE) {
            throw new IOException(name + " is larger than 2 GiB");
        }
        ByteBuffer buf = ByteBuffer.allocate((int) info.byteLength()).order(ByteOrder.LITTLE_ENDIAN);
        readFully(channel, buf, dataStart + info.begin());
        return buf.flip();
    }

    /**
     * Reads the tensor's stored bytes into {@code dst} from its position (which must have room for them),
     * advancing it; for a caller that stages bytes in a buffer of its own (e.g. direct memory for the engine).
     */
    public void readInto(String name, ByteBuffer dst) throws IOException {
        TensorInfo info = info(name);
        if (dst.remaining() < info.byteLength()) {
            throw new IllegalArgumentException(name + " needs " + info.byteLength() + " bytes, the buffer has " + dst.remaining());
        }
        ByteBuffer window = dst.slice().limit((int) info.byteLength());
        readFully(channel, window, dataStart + info.begin());
        dst.position(dst.position() + (int) info.byteLength());
    }

    /**
     * Reads bytes {@code [from, from + dst.remaining())} of the tensor's stored bytes into {@code dst}, advancing it: a
     * caller streams a large tensor through a buffer of its own size.
     */
    public void readRange(String name, long from, ByteBuffer dst) throws IOException {
        TensorInfo info = info(name);
        if (from < 0 || from + dst.remaining() > info.byteLength()) {
            throw new IllegalArgumentException(name + ": bytes [" + from + ", " + (from + dst.remaining())
                    + ") are outside its " + info.byteLength());
        }
        readFully(channel, dst, dataStart + info.begin() + from);
    }

    /**
     * The stored bytes (little-endian) of the named tensors, which must lie {@link #backToBack back to back} in this
     * order, as one read-only view of the file mapped into memory: the page cache's own pages, nothing copied and no
     * fresh memory taken. For a reader that copies them once anyway (e.g. the engine transposing matrices into its
     * own memory), which would otherwise stage them in a buffer first. The mapping lives as long as the buffer is
     * reachable, also after this file is closed.
     */
    public ByteBuffer mappedBytes(String... names) throws IOException {
        if (!backToBack(names)) {
            throw new IllegalArgumentException(path + ": " + String.join(", ", names) + " are not stored back to back");
        }
        long begin = info(names[0]).begin();
        long length = info(names[names.length - 1]).end() - begin;
        if (length > Integer.MAX_VALUE) {
            throw new IOException(String.join(" + ", names) + " is larger than 2 GiB");
        }
        return channel.map(FileChannel.MapMode.READ_ONLY, dataStart + begin, length).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Where the tensor's bytes begin in the file (its data offset plus the header's length). */
    public long absoluteOffset(String name) {
        return dataStart + info(name).begin();
    }

    /** Whether these tensors (at least one) are all in this file, each one's bytes starting where the previous one's end. */
    public boolean backToBack(String... names) {
        if (names.length == 0) {
            return false;
        }
        for (int i = 0; i < names.length; i++) {
            TensorInfo t = tensors.get(names[i]);
            if (t == null || (i > 0 && t.begin() != tensors.get(names[i - 1]).end())) {
                return false;
            }
        }
        return true;
    }

    /** The tensor as float32, widening F16 and BF16 exactly. */
    public float[] readFloats(String name) throws IOException {
        TensorInfo info = info(name);
        return FloatWidening.toFloat32(info.dtype(), rawBytes(name));
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    /**
     * Closes every file, after {@code cause} ended their use: a failure to close one is added to it, and the others
     * are closed all the same.
     */
    public static void closeAll(java.util.Collection<SafetensorsFile> files, Throwable cause) {
        for (SafetensorsFile f : files) {
            try {
                f.close();
            } catch (IOException e) {
                cause.addSuppressed(e);
            }
        }
    }
}
