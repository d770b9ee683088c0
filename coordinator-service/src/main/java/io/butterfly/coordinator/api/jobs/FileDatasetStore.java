package io.butterfly.coordinator.api.jobs;

import io.butterfly.common.fs.DurableFiles;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.jobs.DatasetEntry;
import io.butterfly.coordinator.jobs.Datasets;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The dataset store (docs/jobs.md): each dataset's bytes as uploaded, in a directory, named by their SHA-256
 * ({@code <sha256>.jsonl}). The control log names a dataset by its SHA-256 only; coordinator replicas that share the
 * directory (one machine, or a shared volume) read each other's imports. A file whose bytes no longer hash to its name
 * is not used.
 */
public final class FileDatasetStore implements Datasets {

    private static final Logger log = LoggerFactory.getLogger(FileDatasetStore.class);

    private final Path dir;
    private final Map<String, List<DatasetEntry>> parsed = new ConcurrentHashMap<>();

    public FileDatasetStore(Path dir) {
        this.dir = dir;
    }

    /** A dataset checked, written (once: the same bytes are the same file) and parsed. */
    public record Imported(String sha256, List<DatasetEntry> entries) {
    }

    public Imported store(byte[] jsonl) {
        List<DatasetEntry> entries = DatasetLines.parse(jsonl);
        String sha = sha256(jsonl);
        try {
            Files.createDirectories(dir);
            Path file = file(sha);
            if (!Files.exists(file)) {
                // Durably: the control log names the dataset once this returns, so it must outlive a power cut.
                DurableFiles.write(file, jsonl, false);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write dataset " + sha + " to " + dir, e);
        }
        parsed.put(sha, entries);
        return new Imported(sha, entries);
    }

    @Override
    public Optional<List<DatasetEntry>> entries(String sha256) {
        List<DatasetEntry> known = parsed.get(sha256);
        if (known != null) {
            return Optional.of(known);
        }
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file(sha256));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            log.warn("cannot read dataset {}: {}", sha256, e.toString());
            return Optional.empty();
        }
        if (!sha256(bytes).equals(sha256)) {
            log.warn("dataset file {} no longer hashes to its name: not used", file(sha256));
            return Optional.empty();
        }
        try {
            List<DatasetEntry> entries = DatasetLines.parse(bytes);
            parsed.put(sha256, entries);
            return Optional.of(entries);
        } catch (InvalidRequestException e) {
            log.warn("dataset file {} does not parse: {}", file(sha256), e.getMessage());
            return Optional.empty();
        }
    }

    private Path file(String sha256) {
        return dir.resolve(sha256 + ".jsonl");
    }

    static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is always available", e);
        }
    }
}
