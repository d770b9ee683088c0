package io.butterfly.discovery.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.fs.DurableFiles;
import io.butterfly.testsupport.TinyDisk;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 47, item 10, on a real file system that fills up (a 64 KiB tmpfs; needs root, skipped otherwise). Observed
 * before: with discovery's disk full, every heartbeat (and join) was refused, because its message id could not be
 * journaled, and nothing said the disk was full. Now the id is kept in memory (a replay is still refused while
 * discovery runs), the full disk is reported as such once, the ids are journaled again once there is room, and a
 * restart after that still refuses their replays. A durable write that fails on the full disk leaves the old content
 * and no temporary file.
 */
class FullDiskTest {

    private static final long T0 = 1_790_000_000_000L;
    private static final long WINDOW_MS = 300_000;

    @TempDir
    Path dir;

    @Test
    void aFullDiskIsReportedAndDoesNotRefuseHeartbeats() throws Exception {
        try (TinyDisk disk = TinyDisk.mount(dir)) {
            Path journal = disk.dir().resolve("seen-message-ids");
            try (JournaledSeenMessageIds ids = JournaledSeenMessageIds.open(journal, SeenMessageIds.inMemory(), T0)) {
                assertThat(ids.firstSighting("worker-0/1", T0, WINDOW_MS)).isTrue();
                disk.fill();

                for (int i = 2; i < 200; i++) { // heartbeats every few seconds while the disk is full
                    assertThat(ids.firstSighting("worker-0/" + i, T0 + i, WINDOW_MS)).as("heartbeat %d accepted", i)
                            .isTrue();
                }
                assertThat(ids.diskFull()).as("reported").isTrue();
                assertThat(ids.firstSighting("worker-0/150", T0 + 300, WINDOW_MS)).as("a replay, still refused").isFalse();

                disk.free();
                assertThat(ids.firstSighting("worker-0/200", T0 + 400, WINDOW_MS)).isTrue();
                assertThat(ids.diskFull()).as("journaling again").isFalse();
            }
            try (JournaledSeenMessageIds restarted = JournaledSeenMessageIds.open(journal, SeenMessageIds.inMemory(),
                    T0 + 500)) {
                assertThat(restarted.firstSighting("worker-0/150", T0 + 500, WINDOW_MS))
                        .as("an id accepted while the disk was full, journaled once there was room").isFalse();
            }
        }
    }

    @Test
    void aDurableWriteOnAFullDiskLeavesTheOldContentAndSaysTheDiskIsFull() throws Exception {
        try (TinyDisk disk = TinyDisk.mount(dir)) {
            Path file = disk.dir().resolve("node.key");
            DurableFiles.write(file, "old key\n".getBytes(StandardCharsets.US_ASCII), true);
            disk.fill();

            assertThatThrownBy(() -> DurableFiles.write(file, new byte[32 * 1024], true))
                    .isInstanceOf(IOException.class).satisfies(e -> assertThat(DurableFiles.diskFull(e)).isTrue());
            assertThat(Files.readString(file)).isEqualTo("old key\n");
            try (Stream<Path> files = Files.list(disk.dir())) {
                assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("node.key", "filler");
            }
        }
    }
}
