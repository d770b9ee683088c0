package io.butterfly.worker.capability;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Storage kind (docs/initialization-and-bootstrap.md §2.3 storage_type) from Linux sysfs: the block device
 * behind the data directory if it can be named (its file store "/dev/sda1" → "sda"), otherwise the first
 * real disk. {@code queue/rotational} = 1 is a spinning disk; an "nvme" device is NVMe; anything else SSD.
 */
public final class StorageTypeDetector {

    /** Partition suffixes: sda1 → sda, nvme0n1p2 → nvme0n1, mmcblk0p1 → mmcblk0. */
    private static final Pattern PARTITION = Pattern.compile("^((?:nvme\\d+n\\d+)|(?:mmcblk\\d+)|(?:[a-z]+))(?:p?\\d+)?$");

    private StorageTypeDetector() {
    }

    public static StorageType detect(Path dataDir) {
        String deviceName = null;
        try {
            Path existing = dataDir.toAbsolutePath();
            while (existing != null && !Files.exists(existing)) {
                existing = existing.getParent();
            }
            if (existing != null) {
                deviceName = Files.getFileStore(existing).name();
            }
        } catch (IOException | SecurityException ignored) {
            // unknown file store: fall back to the first disk
        }
        return detect(Path.of("/sys/block"), deviceName);
    }

    /** @param fileStoreName e.g. "/dev/nvme0n1p1", "overlay" or null */
    static StorageType detect(Path sysBlock, String fileStoreName) {
        Optional<String> disk = diskOf(fileStoreName).filter(d -> Files.isDirectory(sysBlock.resolve(d)));
        if (disk.isEmpty()) {
            disk = firstRealDisk(sysBlock);
        }
        return disk.map(d -> classify(sysBlock.resolve(d), d)).orElse(StorageType.STORAGE_TYPE_UNSPECIFIED);
    }

    static Optional<String> diskOf(String fileStoreName) {
        if (fileStoreName == null || !fileStoreName.startsWith("/dev/")) {
            return Optional.empty();
        }
        Matcher m = PARTITION.matcher(fileStoreName.substring("/dev/".length()));
        return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
    }

    private static Optional<String> firstRealDisk(Path sysBlock) {
        if (!Files.isDirectory(sysBlock)) {
            return Optional.empty();
        }
        try (DirectoryStream<Path> devices = Files.newDirectoryStream(sysBlock)) {
            String best = null;
            for (Path d : devices) {
                String name = d.getFileName().toString();
                // Virtual devices say nothing about the hardware.
                if (name.startsWith("loop") || name.startsWith("ram") || name.startsWith("zram") || name.startsWith("dm-")
                        || name.startsWith("md") || name.startsWith("sr") || name.startsWith("nbd")) {
                    continue;
                }
                if (best == null || name.compareTo(best) < 0) {
                    best = name;
                }
            }
            return Optional.ofNullable(best);
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static StorageType classify(Path device, String name) {
        try {
            String rotational = Files.readString(device.resolve("queue").resolve("rotational")).trim();
            if (rotational.equals("1")) {
                return StorageType.HDD;
            }
            return name.startsWith("nvme") ? StorageType.NVME : StorageType.SSD;
        } catch (IOException e) {
            return StorageType.STORAGE_TYPE_UNSPECIFIED;
        }
    }
}
