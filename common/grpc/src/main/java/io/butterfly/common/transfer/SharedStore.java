package io.butterfly.common.transfer;

import io.butterfly.common.manifest.FetchProgress;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.VerifiedFile;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The registry's store where this process can see it: the same directory on one machine, a read-only volume in a
 * cluster ({@code <root>/<model-id>/<file>}, the registry's layout). A weight file found there is used in place
 * instead of being streamed: on one machine the stream's framing, socket copies and a second copy of every byte in
 * fresh page-cache memory were most of a cold bootstrap.
 *
 * <p>Nothing unverified is used. The file is opened once, its SHA-256 computed through that open channel and
 * compared with the signed manifest's, and the same channel is handed to the loader: a file renamed over it
 * afterwards (the registry swaps a re-imported model in by renaming) is not what gets loaded. The registry never
 * writes into a stored file; whoever could would also hold its publisher key, which lives in the same store. A
 * file that is missing, of another size, unreadable or different is left to the gRPC stream.
 */
public final class SharedStore {

    private static final Logger log = LoggerFactory.getLogger(SharedStore.class);
    /** A model id is one path segment (the registry refuses others); anything else is never looked up. */
    private static final Pattern SAFE_SEGMENT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final int BUFFER_BYTES = 1 << 20;

    private final Path root;
    private final AtomicLong bytesVerified = new AtomicLong();

    public SharedStore(Path root) {
        this.root = Objects.requireNonNull(root, "root");
    }

    public Path root() {
        return root;
    }

    /** Bytes of the files used in place so far. */
    public long bytesVerified() {
        return bytesVerified.get();
    }

    /**
     * Opens {@code name} of {@code modelId} in the shared store and checks it against the manifest's size and SHA-256.
     *
     * @return the file with the open channel it was verified through (the caller reads through it and closes it),
     *         or empty when the file is to be streamed from the registry instead
     * @throws InterruptedIOException when the calling thread is interrupted (the download was cancelled)
     */
    public Optional<VerifiedFile> open(String modelId, String name, long size, String expectedSha256,
                                       FetchProgress listener) throws InterruptedIOException {
        if (!SAFE_SEGMENT.matcher(modelId).matches()) {
            return Optional.empty();
        }
        Path source = root.resolve(modelId).resolve(name);
        if (!Files.isRegularFile(source)) {
            log.debug("{} is not in the shared store {}; streaming it", name, root);
            return Optional.empty();
        }
        FileChannel channel = null;
        try {
            channel = FileChannel.open(source, StandardOpenOption.READ);
            if (channel.size() != size) {
                log.warn("{} in the shared store {} has {} bytes but the manifest of {} says {}; streaming it", name, root,
                        channel.size(), modelId, size);
                channel.close();
                return Optional.empty();
            }
            String actual = sha256(channel, name, size, listener);
            String expected = expectedSha256.toLowerCase(Locale.ROOT);
            if (!actual.equals(expected)) {
                log.warn("{} in the shared store {} has sha256 {} but the manifest of {} says {}; streaming it from the"
                        + " registry instead", name, root, actual, modelId, expected);
                channel.close();
                return Optional.empty();
            }
            bytesVerified.addAndGet(size);
            return Optional.of(new VerifiedFile(source, actual, size, channel));
        } catch (IOException e) {
            closeQuietly(channel);
            if (Thread.currentThread().isInterrupted() || e instanceof InterruptedIOException
                    || e instanceof ClosedByInterruptException) {
                InterruptedIOException cancelled = new InterruptedIOException("verification of " + name + " cancelled");
                cancelled.initCause(e);
                throw cancelled;
            }
            log.warn("reading {} from the shared store {} failed ({}); streaming it from the registry instead", name,
                    root, e.toString());
            return Optional.empty();
        }
    }

    /** The SHA-256 of the channel's first {@code size} bytes, read by position (the channel's own position is left alone). */
    private static String sha256(FileChannel channel, String name, long size, FetchProgress listener)
            throws IOException {
        MessageDigest digest = Sha256.newDigest();
        ByteBuffer buf = ByteBuffer.allocate(BUFFER_BYTES);
        long done = 0;
        while (done < size) {
            buf.clear().limit((int) Math.min(BUFFER_BYTES, size - done));
            int n = channel.read(buf, done);
            if (n < 0) {
                throw new IOException(name + " shrank to " + done + " of the manifest's " + size + " bytes while it was read");
            }
            digest.update(buf.array(), 0, n);
            done += n;
            listener.onProgress(name, done, size);
            if (Thread.currentThread().isInterrupted()) {
                throw new InterruptedIOException("verification of " + name + " cancelled");
            }
        }
        return Sha256.toHex(digest.digest());
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                log.debug("closing a shared-store file failed", e);
            }
        }
    }
}
