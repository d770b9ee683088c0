package io.butterfly.discovery.admission;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.api.grpc.ControlMessages;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Replay protection across a restart of discovery: the accepted ids come back from the journal. */
class JournaledSeenMessageIdsTest {

    private static final long T0 = 1_790_000_000_000L;
    private static final long WINDOW_MS = 300_000;

    @TempDir
    Path dir;

    private Path journal() {
        return dir.resolve("data").resolve("seen-message-ids");
    }

    private JournaledSeenMessageIds open(long nowMs) throws IOException {
        return JournaledSeenMessageIds.open(journal(), SeenMessageIds.inMemory(), nowMs);
    }

    private static SignedMessage join(String sender, long messageId) {
        return ControlMessages.read(SignedEnvelope.newBuilder().setSender(sender).setMessageId(messageId)
                .setTimestampMs(T0).build());
    }

    @Test
    void aReplayAfterARestartIsRefused() throws IOException {
        SignedMessage captured = join("worker-0", -7L); // ids are unsigned 64-bit: the key must survive that too
        try (JournaledSeenMessageIds before = open(T0)) {
            assertDoesNotThrow(() -> new MessageIdReplayGuard(WINDOW_MS, before).check(captured, T0));
        }
        // The replica restarts one minute later, its in-memory table empty: the replay is still inside the window.
        try (JournaledSeenMessageIds after = open(T0 + 60_000)) {
            MessageIdReplayGuard guard = new MessageIdReplayGuard(WINDOW_MS, after);
            AdmissionException e = assertThrows(AdmissionException.class, () -> guard.check(captured, T0 + 60_000));
            assertEquals(ErrorCode.INVALID_MESSAGE, e.code());
            assertEquals(ErrorKind.ALREADY_EXISTS, e.kind());
            assertDoesNotThrow(() -> guard.check(join("worker-0", 8), T0 + 60_000), "a new message id is accepted");
            assertDoesNotThrow(() -> guard.check(join("worker-1", -7L), T0 + 60_000), "ids are per sender");
        }
    }

    @Test
    void idsOutsideTheWindowAreForgottenAndDroppedFromTheJournal() throws IOException {
        try (JournaledSeenMessageIds ids = open(T0)) {
            assertTrue(ids.firstSighting("a/1", T0, 1_000));
            assertTrue(ids.firstSighting("b/2", T0, 10_000));
            assertFalse(ids.firstSighting("a/1", T0 + 1, 1_000));
        }
        try (JournaledSeenMessageIds ids = open(T0 + 5_000)) {
            assertEquals(1, Files.readAllLines(journal()).size(), "the expired id is not kept");
            assertTrue(ids.firstSighting("a/1", T0 + 5_000, 1_000), "a/1 expired: the timestamp window refuses it anyway");
            assertFalse(ids.firstSighting("b/2", T0 + 5_000, 10_000));
        }
    }

    @Test
    void aLineCutShortByAKillIsSkippedAndTheRestRestored() throws IOException {
        try (JournaledSeenMessageIds ids = open(T0)) {
            assertTrue(ids.firstSighting("worker-0/1", T0, WINDOW_MS));
            assertTrue(ids.firstSighting("weird\nnode id/2", T0, WINDOW_MS));
        }
        Files.writeString(journal(), String.valueOf(T0 + WINDOW_MS).substring(0, 7), StandardCharsets.UTF_8,
                StandardOpenOption.APPEND);
        Files.writeString(journal(), "\nnot-a-number d29ya2Vy\n" + (T0 + WINDOW_MS) + " %%%\n", StandardCharsets.UTF_8,
                StandardOpenOption.APPEND);
        try (JournaledSeenMessageIds ids = open(T0 + 1)) {
            assertFalse(ids.firstSighting("worker-0/1", T0 + 1, WINDOW_MS));
            assertFalse(ids.firstSighting("weird\nnode id/2", T0 + 1, WINDOW_MS), "a key with a newline round-trips");
            assertTrue(ids.firstSighting("worker-0/3", T0 + 1, WINDOW_MS));
        }
    }

    @Test
    void theJournalStaysAsLargeAsTheIdsStillInTheWindow() throws IOException {
        try (JournaledSeenMessageIds ids = open(T0)) {
            // A member heartbeating for a long time: each id expires long before the 20,000th arrives.
            for (int i = 0; i < 20_000; i++) {
                assertTrue(ids.firstSighting("worker-0/" + i, T0 + i * 100L, 1_000));
            }
            assertFalse(ids.firstSighting("worker-0/19999", T0 + 1_999_950L, 1_000));
        }
        long lines = Files.readAllLines(journal()).size();
        assertTrue(lines <= 4096 + 10, "journal has " + lines + " lines");
        try (JournaledSeenMessageIds ids = open(T0 + 1_999_950L)) {
            assertFalse(ids.firstSighting("worker-0/19999", T0 + 1_999_950L, 1_000), "the newest survive the rewrites");
        }
    }
}
