package io.butterfly.worker.capability;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class StorageAndBandwidthTest {

    @TempDir
    Path sys;

    private void disk(String name, String rotational) throws IOException {
        Path queue = Files.createDirectories(sys.resolve(name).resolve("queue"));
        Files.writeString(queue.resolve("rotational"), rotational + "\n");
    }

    @Test
    void partitionsMapToTheirDisk() {
        assertEquals(Optional.of("sda"), StorageTypeDetector.diskOf("/dev/sda1"));
        assertEquals(Optional.of("nvme0n1"), StorageTypeDetector.diskOf("/dev/nvme0n1p2"));
        assertEquals(Optional.of("mmcblk0"), StorageTypeDetector.diskOf("/dev/mmcblk0p1"));
        assertEquals(Optional.of("vdb"), StorageTypeDetector.diskOf("/dev/vdb"));
        assertEquals(Optional.empty(), StorageTypeDetector.diskOf("overlay"));
    }

    @Test
    void rotationalFlagAndNvmeNameDecideTheType() throws IOException {
        disk("sda", "1");
        disk("sdb", "0");
        disk("nvme0n1", "0");
        disk("loop0", "0");
        assertEquals(StorageType.HDD, StorageTypeDetector.detect(sys, "/dev/sda3"));
        assertEquals(StorageType.SSD, StorageTypeDetector.detect(sys, "/dev/sdb1"));
        assertEquals(StorageType.NVME, StorageTypeDetector.detect(sys, "/dev/nvme0n1p1"));
        // An overlay (container) file store: the first real disk, never the loop device.
        assertEquals(StorageType.NVME, StorageTypeDetector.detect(sys, "overlay"));
    }

    @Test
    void noSysfsMeansUnknown() {
        assertEquals(StorageType.STORAGE_TYPE_UNSPECIFIED, StorageTypeDetector.detect(sys.resolve("absent"), "overlay"));
    }

    @Test
    void bandwidthBenchmarkIsQuickAndPlausible() {
        long start = System.nanoTime();
        double gbps = MemoryBandwidth.measureGbps(250_000_000L);
        long elapsedMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(gbps > 0.1 && gbps < 10_000, "GB/s " + gbps);
        // The budget (0.25 s, set-up included) keeps it under the spec's 0.5 s; the bound here leaves room
        // for a loaded build machine descheduling the test thread.
        assertTrue(elapsedMs < 1000, "took " + elapsedMs + " ms");
    }
}
