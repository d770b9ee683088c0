package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.butterfly.proto.registry.v1.WeightFile;
import java.util.List;
import org.junit.jupiter.api.Test;

class PartitionProgressTest {

    @Test
    void bytesAccumulateOverTheFilesOfThePartition() {
        PartitionProgress p = new PartitionProgress(List.of(
                WeightFile.newBuilder().setName("a").setSizeBytes(100).build(),
                WeightFile.newBuilder().setName("b").setSizeBytes(300).build()));
        assertEquals(400, p.total());
        assertEquals(50, p.update("a", 50, 100));
        assertEquals(100, p.update("a", 100, 100));
        // The next file starts at 0 of its own size: the partition's count does not fall back.
        assertEquals(100, p.update("b", 0, 300));
        assertEquals(250, p.update("b", 150, 300));
        assertEquals(400, p.update("b", 300, 300));
        // A file the list did not size is counted with the downloader's total.
        assertEquals(410, p.update("c", 10, 20));
        assertEquals(420, p.total());
    }
}
