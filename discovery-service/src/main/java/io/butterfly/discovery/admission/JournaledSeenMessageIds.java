package io.butterfly.discovery.admission;

import io.butterfly.common.fs.DurableFiles;
import java.io.BufferedWriter;
import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Accepted message ids that outlive a restart of this replica. Without it a discovery that restarts (the
 * embedded default is one replica, whose table is in its memory) forgets every id, and a JOIN or LEAVE captured
 * before the restart could be replayed as long as its timestamp is still in the window.
 *
 * <p>Each first sighting is appended to a journal (one line: expiry in ms, then the key in base64, since a
 * sender's node id may hold any character) before it is answered;
 * at start the unexpired lines are loaded into the table in front of which this sits, and the journal is
 * rewritten with only those. It is flushed to the operating system on every append, so it survives the
 * process being killed (not a power loss: an id lost that way is one whose sender's clock also has to be
 * within the window for a replay to pass).
 */
public final class JournaledSeenMessageIds implements SeenMessageIds, Closeable {

    private static final Logger log = LoggerFactory.getLogger(JournaledSeenMessageIds.class);
    /** Appends between rewrites at least, so that a small table is not rewritten over and over. */
    private static final int MIN_APPENDS_BEFORE_REWRITE = 4096;
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

    private final SeenMessageIds table;
    private final Path file;
    /** key -> expiry (ms): what a rewrite keeps. */
    private final Map<String, Long> live = new HashMap<>();
    private BufferedWriter out;
    private int appendsSinceRewrite;
    private int keptAtRewrite;
    /** When appends began to fail for want of disk (ms), or 0. */
    private long diskFullSince;
    private boolean closed;

    private JournaledSeenMessageIds(SeenMessageIds table, Path file) {
        this.table = table;
        this.file = file;
    }

    /**
     * Loads the unexpired ids journaled in {@code file} (created if missing) into {@code table} and journals
     * from now on every id {@code table} sees first.
     */
    public static JournaledSeenMessageIds open(Path file, SeenMessageIds table, long nowMs) throws IOException {
        JournaledSeenMessageIds journal = new JournaledSeenMessageIds(table, file);
        Files.createDirectories(file.toAbsolutePath().getParent());
        int restored = 0;
        int unreadable = 0;
        if (Files.exists(file)) {
            for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
                Map.Entry<String, Long> entry = parse(line);
                if (entry == null) {
                    unreadable++; // e.g. the last line of a journal whose writer was killed mid-line
                } else if (entry.getValue() > nowMs) {
                    table.firstSighting(entry.getKey(), nowMs, entry.getValue() - nowMs);
                    journal.live.merge(entry.getKey(), entry.getValue(), Math::max);
                    restored++;
                }
            }
        }
        if (unreadable > 0) {
            log.warn("{}: skipped {} unreadable line(s)", file, unreadable);
        }
        log.info("{}: {} message id(s) still inside the replay window restored", file, restored);
        journal.rewrite(nowMs);
        return journal;
    }

    @Override
    public synchronized boolean firstSighting(String key, long nowMs, long retainMs) {
        if (!table.firstSighting(key, nowMs, retainMs)) {
            return false;
        }
        long expiresMs = nowMs + retainMs;
        live.put(key, expiresMs); // kept for the next rewrite, whatever becomes of this append
        try {
            if (closed) {
                throw new IOException("the journal is closed (discovery is stopping)");
            }
            if (out == null) {
                rewrite(nowMs); // the last rewrite failed for want of disk: again, with this id
            }
            out.write(line(key, expiresMs) + "\n");
            out.flush();
            // Rewritten once it holds at least twice the lines it was rewritten with: O(1) per append, amortised.
            if (++appendsSinceRewrite >= Math.max(MIN_APPENDS_BEFORE_REWRITE, keptAtRewrite)) {
                rewrite(nowMs);
            }
            if (diskFullSince != 0) {
                log.info("{}: journaling message ids again ({} ms after the disk filled up)", file, nowMs - diskFullSince);
                diskFullSince = 0;
            }
        } catch (IOException e) {
            if (DurableFiles.diskFull(e)) {
                // A full disk is said as such, and does not turn into refusals of every heartbeat and join: the id is
                // remembered in memory (a replay is still refused while this process runs) and written again with
                // the next rewrite; only a restart before then forgets it.
                if (diskFullSince == 0) {
                    diskFullSince = nowMs;
                    log.error("{}: the disk is full ({}): message ids are kept in memory only until it has room again;"
                            + " a restart of discovery meanwhile forgets them", file, e.getMessage());
                }
                reopenAfterFailedAppend();
                return true;
            }
            // Refuse rather than accept an id a restart would forget: the sender retries with a new message.
            throw new UncheckedIOException("could not journal message id " + key + " in " + file, e);
        }
        return true;
    }

    /** Whether appends fail for want of disk now (reported at ERROR once, when it starts). */
    public synchronized boolean diskFull() {
        return diskFullSince != 0;
    }

    /** A writer whose flush failed may hold a torn line: the next rewrite writes every live id again anyway. */
    private void reopenAfterFailedAppend() {
        appendsSinceRewrite = Math.max(MIN_APPENDS_BEFORE_REWRITE, keptAtRewrite); // rewrite at the next append
    }

    /** Replaces the journal with its unexpired lines (written aside, then moved over it) and appends after them. */
    private void rewrite(long nowMs) throws IOException {
        live.values().removeIf(expiresMs -> expiresMs <= nowMs);
        Path next = file.resolveSibling(file.getFileName() + ".next");
        List<String> lines = live.entrySet().stream().map(e -> line(e.getKey(), e.getValue())).toList();
        Files.write(next, lines, StandardCharsets.UTF_8);
        if (out != null) {
            try {
                out.close();
            } catch (IOException unflushed) {
                // its lines are in the rewrite
            }
            out = null;
        }
        try {
            Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(next, file, StandardCopyOption.REPLACE_EXISTING);
        }
        DurableFiles.syncDirectory(file.toAbsolutePath().getParent());
        out = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        appendsSinceRewrite = 0;
        keptAtRewrite = lines.size();
    }

    /** A journal line's key and expiry (ms), or null if the line is not one {@link #line} writes. */
    private static Map.Entry<String, Long> parse(String line) {
        int space = line.indexOf(' ');
        if (space <= 0 || space == line.length() - 1) {
            return null;
        }
        try {
            long expiresMs = Long.parseLong(line.substring(0, space));
            String key = new String(DECODER.decode(line.substring(space + 1)), StandardCharsets.UTF_8);
            return expiresMs < 0 ? null : Map.entry(key, expiresMs);
        } catch (IllegalArgumentException e) { // NumberFormatException too
            return null;
        }
    }

    private static String line(String key, long expiresMs) {
        return expiresMs + " " + ENCODER.encodeToString(key.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public synchronized void close() throws IOException {
        closed = true;
        if (out != null) {
            out.close();
            out = null;
        }
    }
}
