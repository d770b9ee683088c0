package io.butterfly.worker.partition;

import io.butterfly.proto.registry.v1.WeightFile;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Turns the downloader's per-file progress into the partition's (bootstrap-protocol.md §6.4: percent,
 * bytes and ETA are over all files of the partition, so the bar never jumps back when the next file starts).
 */
final class PartitionProgress {

    private final Map<String, Long> sizes = new LinkedHashMap<>();
    private final Map<String, Long> done = new LinkedHashMap<>();

    PartitionProgress(List<WeightFile> files) {
        files.forEach(f -> sizes.put(f.getName(), f.getSizeBytes()));
    }

    /** Records {@code fileDone} of {@code fileTotal} bytes of one file; returns the bytes done over all files. */
    synchronized long update(String file, long fileDone, long fileTotal) {
        if (sizes.getOrDefault(file, 0L) <= 0) {
            sizes.put(file, fileTotal); // not in the list or size unknown: trust the downloader
        }
        done.put(file, Math.min(Math.max(fileDone, 0), sizes.get(file)));
        return done.values().stream().mapToLong(Long::longValue).sum();
    }

    synchronized long total() {
        return sizes.values().stream().mapToLong(Long::longValue).sum();
    }
}
