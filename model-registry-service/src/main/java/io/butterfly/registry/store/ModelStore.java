package io.butterfly.registry.store;

import io.butterfly.common.manifest.ModelIds;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.locks.ReadWriteLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The on-disk store: {@code <store>/<modelId>/} holds a model's shards, its {@code manifest.json} and
 * the fingerprint of the source it was imported from ({@code source.fingerprint}). A model directory
 * is replaced as a whole: an import writes into a staging directory that is swapped in when complete.
 */
public class ModelStore {

    public static final String MANIFEST_FILE = "manifest.json";
    public static final String BLOCK_INDEX_FILE = "blocks.json";
    public static final String FINGERPRINT_FILE = "source.fingerprint";
    private static final String IMPORTING = ".importing-";
    private static final String OLD = ".old-";
    private static final Logger log = LoggerFactory.getLogger(ModelStore.class);
    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    private final Path root;
    /** Names in the root that are not models (e.g. the publisher key's directory): no import may take them. */
    private final Set<String> reservedNames;
    private final Map<String, BlockIndex> blockIndexes = new java.util.concurrent.ConcurrentHashMap<>();
    /**
     * A model directory is swapped in two moves; a file is opened together with its block index under the read
     * side, so a transfer starting meanwhile sees the old pair or the new one, never a missing directory or
     * the old index over the new bytes. An opened file keeps reading its bytes after a swap.
     */
    private final ReadWriteLock swap = new ReentrantReadWriteLock();

    public ModelStore(Path root) throws IOException {
        this(root, List.of());
    }

    /**
     * @param reservedDirs directories that live in the store's root beside the models (others are ignored): a
     *                     model id equal to one of their names is refused, since committing that model would
     *                     replace the directory
     */
    public ModelStore(Path root, List<Path> reservedDirs) throws IOException {
        this.root = root.toAbsolutePath().normalize();
        Files.createDirectories(this.root);
        this.reservedNames = reservedDirs.stream().map(d -> d.toAbsolutePath().normalize())
                .filter(d -> this.root.equals(d.getParent())).map(d -> d.getFileName().toString())
                .collect(Collectors.toUnmodifiableSet());
        finishInterruptedSwaps();
    }

    /**
     * A registry stopped between the two moves of {@link #commit} left the model's directory missing, beside
     * the complete staging directory ({@code .<id>.importing-*}, with its manifest) and the previous one
     * ({@code .<id>.old-*}). The swap is finished (the new import, complete since its manifest is written last)
     * or undone (the previous one); leftovers of interrupted imports and finished swaps are deleted.
     */
    private void finishInterruptedSwaps() throws IOException {
        List<Leftover> leftovers = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(root, ".*")) {
            for (Path p : s) {
                Leftover.of(p).filter(l -> isValidModelId(l.modelId()) && !isReserved(l.modelId())
                        && Files.isDirectory(p)).ifPresent(leftovers::add);
            }
        }
        // A complete new import wins over the previous directory; the newest first.
        leftovers.sort(Comparator.comparing((Leftover l) -> !l.importing())
                .thenComparing(l -> modifiedTime(l.dir()), Comparator.reverseOrder()));
        for (Leftover l : leftovers) {
            Path target = root.resolve(l.modelId());
            if (!Files.exists(target) && Files.isRegularFile(l.dir().resolve(MANIFEST_FILE))) {
                move(l.dir(), target);
                log.warn("model {}: a swap was interrupted by a stop; {} restored as its directory", l.modelId(),
                        l.dir().getFileName());
            } else {
                deleteRecursively(l.dir());
                log.info("model {}: deleted {}, left by an interrupted import or swap", l.modelId(), l.dir().getFileName());
            }
        }
    }

    /** A staging ({@code .<id>.importing-<digits>}) or replaced ({@code .<id>.old-<digits>}) model directory. */
    private record Leftover(Path dir, String modelId, boolean importing) {
        static Optional<Leftover> of(Path dir) {
            String name = dir.getFileName().toString();
            int importing = name.lastIndexOf(IMPORTING);
            int old = name.lastIndexOf(OLD);
            int mark = Math.max(importing, old); // the temp-directory suffix after the last mark is digits
            return mark <= 1 ? Optional.empty() : Optional.of(new Leftover(dir, name.substring(1, mark), importing > old));
        }
    }

    private static FileTime modifiedTime(Path p) {
        try {
            return Files.getLastModifiedTime(p);
        } catch (IOException e) {
            return FileTime.fromMillis(0);
        }
    }

    /** Whether {@code modelId} names something else the registry keeps in its store (e.g. its publisher key). */
    public boolean isReserved(String modelId) {
        return reservedNames.contains(modelId);
    }

    public Path root() {
        return root;
    }

    public static boolean isValidModelId(String modelId) {
        return ModelIds.isValid(modelId);
    }

    public Path modelDir(String modelId) {
        if (!isValidModelId(modelId) || isReserved(modelId)) {
            throw new IllegalArgumentException("invalid model id '" + modelId + "'");
        }
        return root.resolve(modelId);
    }

    /** A stored file of a model; the name must be one the manifest lists (checked by the caller). */
    public Path file(String modelId, String fileName) {
        Path p = modelDir(modelId).resolve(fileName).normalize();
        if (!p.getParent().equals(modelDir(modelId))) {
            throw new IllegalArgumentException("invalid file name '" + fileName + "'");
        }
        return p;
    }

    /** A fresh staging directory for an import of {@code modelId}. */
    public Path newStagingDir(String modelId) throws IOException {
        modelDir(modelId);
        return Files.createTempDirectory(root, "." + modelId + IMPORTING);
    }

    /** Writes manifest and fingerprint into the staging directory and swaps it in place of the model's directory. */
    public void commit(Path staging, Manifest manifest, String fingerprint) throws IOException {
        writeBlockIndex(staging, manifest);
        Files.writeString(staging.resolve(FINGERPRINT_FILE), fingerprint, StandardCharsets.UTF_8);
        Path tmp = staging.resolve(MANIFEST_FILE + ".tmp");
        Files.write(tmp, JSON.writeValueAsBytes(manifest));
        Files.move(tmp, staging.resolve(MANIFEST_FILE), StandardCopyOption.ATOMIC_MOVE);
        Path target = modelDir(manifest.modelId());
        Path old = null;
        swap.writeLock().lock();
        try {
            if (Files.exists(target)) {
                old = Files.createTempDirectory(root, "." + manifest.modelId() + OLD);
                Files.delete(old);
                move(target, old);
            }
            move(staging, target);
            blockIndexes.remove(manifest.modelId());
        } finally {
            swap.writeLock().unlock();
        }
        if (old != null) {
            deleteRecursively(old);
        }
    }

    /** A stored file opened for reading, with the block index of the same import. */
    public record OpenFile(FileChannel channel, BlockIndex index) implements Closeable {
        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Opens {@code file} (a path of {@link #file}) with {@code manifest}'s block index, both of the same
     * import even while a re-import swaps the model's directory.
     *
     * @throws UncheckedIOException if the block index cannot be read or rebuilt
     */
    public OpenFile open(Manifest manifest, Path file) throws IOException {
        swap.readLock().lock();
        try {
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
            try {
                return new OpenFile(channel, blockIndex(manifest));
            } catch (RuntimeException e) {
                channel.close();
                throw e;
            }
        } finally {
            swap.readLock().unlock();
        }
    }

    /**
     * The block hashes of a stored model, from its {@value #BLOCK_INDEX_FILE}. A store written before
     * block indexes existed gets one now, from the bytes as they are (logged: tampering that happened
     * before this moment is then only caught by the client's whole-file check).
     */
    public BlockIndex blockIndex(Manifest manifest) {
        return blockIndexes.computeIfAbsent(manifest.modelId(), id -> {
            Path dir = modelDir(id);
            try {
                Path f = dir.resolve(BLOCK_INDEX_FILE);
                if (Files.isRegularFile(f)) {
                    BlockIndex stored;
                    try {
                        stored = JSON.readValue(Files.readAllBytes(f), BlockIndex.class);
                    } catch (JacksonException e) {
                        // Unchecked in Jackson 3: would reach the client as a bare INTERNAL error.
                        throw new IOException("registry store corrupted: " + f + " of stored model " + id
                                + " is unreadable: " + e.getOriginalMessage(), e);
                    }
                    if (stored.algorithm().equals(BlockIndex.CRC32C)) {
                        return stored;
                    }
                    // An index from before CRC32C: verify the bytes against it once, then index them anew.
                    verifyAgainst(dir, stored);
                    log.info("stored model {}: block index re-written with CRC32C", id);
                    return writeBlockIndex(dir, manifest);
                }
                log.warn("stored model {} has no block index; indexing its current bytes", id);
                return writeBlockIndex(dir, manifest);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private static BlockIndex writeBlockIndex(Path dir, Manifest manifest) throws IOException {
        Map<String, List<String>> files = new LinkedHashMap<>();
        for (ManifestFile f : manifest.files()) {
            files.put(f.name(), BlockIndex.checksumBlocks(dir.resolve(f.name()), BlockIndex.DEFAULT_BLOCK_BYTES,
                    BlockIndex.CRC32C));
        }
        BlockIndex index = new BlockIndex(BlockIndex.DEFAULT_BLOCK_BYTES, BlockIndex.CRC32C, files);
        Path tmp = dir.resolve(BLOCK_INDEX_FILE + ".tmp");
        Files.write(tmp, JSON.writeValueAsBytes(index));
        Files.move(tmp, dir.resolve(BLOCK_INDEX_FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return index;
    }

    /** Checks every block of the stored files against an older (SHA-256) index; a mismatch is refused. */
    private static void verifyAgainst(Path dir, BlockIndex index) throws IOException {
        for (Map.Entry<String, List<String>> e : index.files().entrySet()) {
            List<String> expected = e.getValue();
            List<String> actual = BlockIndex.checksumBlocks(dir.resolve(e.getKey()), index.blockBytes(), index.algorithm());
            for (int b = 0; b < expected.size(); b++) {
                if (b >= actual.size() || !actual.get(b).equals(expected.get(b))) {
                    throw new IOException("registry store corrupted: " + e.getKey() + " block " + b
                            + " no longer matches its import; not re-indexing it");
                }
            }
        }
    }

    /** The stored manifest if it was imported from a source with this fingerprint and its files are all there. */
    public Optional<Manifest> loadIfCurrent(String modelId, String fingerprint) {
        Path dir = modelDir(modelId);
        try {
            if (!Files.isRegularFile(dir.resolve(FINGERPRINT_FILE))
                    || !fingerprint.equals(Files.readString(dir.resolve(FINGERPRINT_FILE), StandardCharsets.UTF_8).trim())) {
                return Optional.empty();
            }
            return load(modelId);
        } catch (IOException e) {
            log.warn("cannot read the stored import of {}: {}", modelId, e.toString());
            return Optional.empty();
        }
    }

    /** The stored manifest of a model, if present and complete (every file there with its size). */
    public Optional<Manifest> load(String modelId) {
        Path dir = modelDir(modelId);
        try {
            Manifest m = JSON.readValue(Files.readAllBytes(dir.resolve(MANIFEST_FILE)), Manifest.class);
            if (!modelId.equals(m.modelId())) {
                return Optional.empty();
            }
            for (ManifestFile f : m.files()) {
                Path p = dir.resolve(f.name());
                if (!Files.isRegularFile(p) || Files.size(p) != f.sizeBytes()) {
                    log.warn("stored model {} is incomplete: {} is missing or has the wrong size", modelId, f.name());
                    return Optional.empty();
                }
            }
            return Optional.of(m);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException | JacksonException e) {
            log.warn("cannot read the stored manifest of {}: {}", modelId, e.toString());
            return Optional.empty();
        }
    }

    /** Every stored model id (directories with a manifest). */
    public List<String> storedModelIds() throws IOException {
        List<String> ids = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(root)) {
            for (Path p : s) {
                String name = p.getFileName().toString();
                if (isValidModelId(name) && !isReserved(name) && Files.isRegularFile(p.resolve(MANIFEST_FILE))) {
                    ids.add(name);
                }
            }
        }
        ids.sort(null);
        return ids;
    }

    public static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.delete(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
                    Files.delete(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            log.warn("could not delete {}: {}", dir, e.toString());
        }
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to);
        }
    }
}
