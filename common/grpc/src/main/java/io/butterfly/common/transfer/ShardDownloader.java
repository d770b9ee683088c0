package io.butterfly.common.transfer;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.FetchProgress;
import io.butterfly.common.retry.Retries;
import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.registry.v1.ChunkCompression;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.OutputStream;
import java.security.MessageDigest;
import java.util.zip.CRC32C;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Optional;
import java.util.concurrent.CompletionService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fetches a model's files from the registry ({@code FetchFile}) into a local directory: every chunk
 * is verified against its CRC32C (a SHA-256 from a registry that sends one instead), bytes land in
 * {@code <name>.part} (an interrupted download resumes
 * from the part's length), and the whole file is checked against the manifest's size and checksum
 * before an atomic rename to its final name. A file already present with the right checksum is not
 * fetched again; a file that fails verification is deleted, never left in place.
 */
public final class ShardDownloader {

    private static final Logger log = LoggerFactory.getLogger(ShardDownloader.class);

    /** Default chunk size asked of the registry (it caps it). */
    public static final int DEFAULT_CHUNK_SIZE = 1 << 20;
    /** Default deadline for one file's stream. */
    public static final Duration DEFAULT_FILE_DEADLINE = Duration.ofMinutes(10);

    /** Files fetched at the same time by default: hashing one while the next arrives keeps two cores busy. */
    public static final int DEFAULT_PARALLEL_FILES = 2;

    /**
     * How failed streams are retried (Resilience4j's Retry, by {@link Retries}); each retry resumes after the last
     * verified chunk (the part file holds only verified bytes), after an exponential backoff with equal jitter.
     *
     * @param maxRefetches        retries after corrupted data (DATA_LOSS) before failing with CHECKSUM_MISMATCH
     * @param maxTransientRetries retries in a row, without a verified byte gained, after the registry was unreachable or slow (e.g. restarting)
     * @param initialBackoff      backoff before the first retry; doubles per retry
     * @param maxBackoff          cap of the backoff
     */
    public record RetryPolicy(int maxRefetches, int maxTransientRetries, Duration initialBackoff, Duration maxBackoff) {
        public static final RetryPolicy DEFAULT = new RetryPolicy(2, 8, Duration.ofMillis(200), Duration.ofSeconds(5));
    }

    private final ModelRegistryGrpc.ModelRegistryBlockingStub registry;
    private final Duration fileDeadline;
    private final int chunkSize;
    private final RetryPolicy retry;
    private boolean compression;
    private final int parallelFiles;
    private CircuitBreaker breaker;
    private SharedStore sharedStore;
    private final java.util.concurrent.atomic.AtomicLong bytesFetched = new java.util.concurrent.atomic.AtomicLong();

    public ShardDownloader(ModelRegistryGrpc.ModelRegistryBlockingStub registry) {
        this(registry, DEFAULT_FILE_DEADLINE, DEFAULT_CHUNK_SIZE);
    }

    public ShardDownloader(ModelRegistryGrpc.ModelRegistryBlockingStub registry, Duration fileDeadline, int chunkSize) {
        this(registry, fileDeadline, chunkSize, RetryPolicy.DEFAULT);
    }

    public ShardDownloader(ModelRegistryGrpc.ModelRegistryBlockingStub registry, Duration fileDeadline, int chunkSize,
                           RetryPolicy retry) {
        this(registry, fileDeadline, chunkSize, retry, DEFAULT_PARALLEL_FILES);
    }

    public ShardDownloader(ModelRegistryGrpc.ModelRegistryBlockingStub registry, Duration fileDeadline, int chunkSize,
                           RetryPolicy retry, int parallelFiles) {
        if (parallelFiles <= 0) {
            throw new IllegalArgumentException("parallelFiles must be positive: " + parallelFiles);
        }
        this.parallelFiles = parallelFiles;
        this.retry = Objects.requireNonNull(retry, "retry");
        this.registry = Objects.requireNonNull(registry, "registry");
        this.fileDeadline = Objects.requireNonNull(fileDeadline, "fileDeadline");
        if (chunkSize <= 0) {
            throw new IllegalArgumentException("chunkSize must be positive: " + chunkSize);
        }
        this.chunkSize = chunkSize;
    }

    /**
     * Downloads (or reuses) the named files of {@code manifest} into {@code dir}.
     *
     * @return the local paths, in the order asked
     */
    public List<Path> download(Manifest manifest, List<String> fileNames, Path dir, FetchProgress progress)
            throws IOException {
        List<VerifiedFile> verified = downloadVerified(manifest, fileNames, dir, progress);
        verified.forEach(VerifiedFile::closeChannel); // a caller of paths reads by path
        return verified.stream().map(VerifiedFile::path).toList();
    }

    /**
     * {@link #download}, answering each file with the digest it was verified with, so a caller that needs
     * the files' digests later (cross-validation) does not hash them again. Files used in place in the shared
     * store come with their open channels, the caller's to close; if the download fails, none is left open.
     */
    public List<VerifiedFile> downloadVerified(Manifest manifest, List<String> fileNames, Path dir,
                                               FetchProgress progress) throws IOException {
        FetchProgress listener = progress == null ? (f, d, t) -> { } : progress;
        Files.createDirectories(dir);
        List<ManifestFile> files = fileNames.stream().map(name -> find(manifest, name)).toList();
        FetchProgress overall = new OverallProgress(files, listener);
        int threads = Math.min(parallelFiles, files.size());
        if (threads <= 1) {
            List<VerifiedFile> paths = new ArrayList<>(files.size());
            try {
                for (ManifestFile file : files) {
                    paths.add(fetch(manifest.modelId(), file, dir, overall));
                }
            } catch (IOException | RuntimeException e) {
                paths.forEach(VerifiedFile::closeChannel);
                throw e;
            }
            return paths;
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads, DaemonThreads.named("shard-fetch"));
        Map<Future<VerifiedFile>, Integer> positions = new HashMap<>();
        boolean succeeded = false;
        try {
            // Results are taken as they complete, so the first file to fail ends the download at once
            // (waiting in file order kept fetching a large file while a later one had already failed).
            CompletionService<VerifiedFile> completed = new ExecutorCompletionService<>(pool);
            for (int i = 0; i < files.size(); i++) {
                ManifestFile file = files.get(i);
                positions.put(completed.submit(() -> fetch(manifest.modelId(), file, dir, overall)), i);
            }
            VerifiedFile[] paths = new VerifiedFile[files.size()];
            for (int n = 0; n < files.size(); n++) {
                Future<VerifiedFile> done = completed.take();
                paths[positions.get(done)] = done.get();
            }
            succeeded = true;
            return List.of(paths);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("download of " + manifest.modelId() + " interrupted");
        } catch (ExecutionException e) {
            // The first failure wins; the other fetches are cancelled below.
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) {
                throw io;
            }
            if (cause instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(cause);
        } finally {
            stop(pool);
            if (!succeeded) {
                closeCompleted(positions.keySet());
            }
        }
    }

    /** Closes the channels of the files that were verified in place before a download failed. */
    private static void closeCompleted(java.util.Collection<Future<VerifiedFile>> fetches) {
        for (Future<VerifiedFile> f : fetches) {
            if (f.isDone() && !f.isCancelled()) {
                try {
                    f.get().closeChannel();
                } catch (ExecutionException | InterruptedException e) {
                    // failed: it holds no channel
                }
            }
        }
    }

    /**
     * Cancels the fetches still running and waits for their threads to end, so none is still appending to a
     * part file when the caller (or its next download) goes on.
     */
    private static void stop(ExecutorService pool) {
        pool.shutdownNow();
        boolean interrupted = false;
        while (true) {
            try {
                if (pool.awaitTermination(30, TimeUnit.SECONDS)) {
                    break;
                }
                log.warn("fetch threads still running 30 s after they were cancelled; waiting on");
            } catch (InterruptedException e) {
                interrupted = true; // keep waiting: the part files must be left alone first
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Sums per-file progress into progress over all files asked. */
    private static final class OverallProgress implements FetchProgress {
        private final Map<String, Long> doneByFile = new HashMap<>();
        private final long total;
        private final FetchProgress listener;

        OverallProgress(List<ManifestFile> files, FetchProgress listener) {
            this.total = files.stream().mapToLong(ManifestFile::sizeBytes).sum();
            this.listener = listener;
        }

        @Override
        public synchronized void onProgress(String file, long bytesDone, long fileTotal) {
            doneByFile.put(file, bytesDone);
            long done = 0;
            for (long d : doneByFile.values()) {
                done += d;
            }
            listener.onProgress(file, done, total);
        }
    }

    /** Offers the COMPRESSION feature: the registry may then send zstd chunks (worth it off loopback). */
    public ShardDownloader withCompression(boolean offer) {
        this.compression = offer;
        return this;
    }

    /**
     * Uses weight files ({@code .safetensors}) in place where the registry's store is visible ({@link SharedStore}):
     * each is checked against the manifest through the channel it is then read by, and one that is not there or
     * differs is streamed as usual. Such files come back with their open channel (see {@link VerifiedFile}).
     */
    public ShardDownloader withSharedStore(SharedStore store) {
        this.sharedStore = Objects.requireNonNull(store, "store");
        return this;
    }

    /**
     * Guards every stream with {@code breaker} (shared per registry by the caller): while it is open no
     * call is made, the downloader waits out its backoff instead, so a registry that is down is not
     * hammered by every worker's retries.
     */
    public ShardDownloader withCircuitBreaker(CircuitBreaker breaker) {
        this.breaker = Objects.requireNonNull(breaker, "breaker");
        return this;
    }

    /**
     * The registry's manifest of {@code modelId} (its signature is the caller's to check), asked through the
     * breaker and retried like a file stream while the registry is unreachable: a registry restarting when an
     * assignment arrives must not fail the partition.
     */
    public Manifest manifest(String modelId) {
        int[] retries = {0};
        return Retries.untilDone("registry-manifest", () -> {
            long started = System.nanoTime();
            StatusRuntimeException failure;
            if (breaker != null && !breaker.tryAcquirePermission()) {
                failure = Status.UNAVAILABLE.withDescription("the registry's circuit breaker is open after repeated failures")
                        .asRuntimeException();
                if (breaker.getState() == CircuitBreaker.State.HALF_OPEN) {
                    // Another call is the probe: wait for its outcome without spending a retry, as files do.
                    throw new Retries.TryAgain(failure, backoffMillis(retries[0] + 1));
                }
            } else {
                try {
                    ModelManifest m = registry.withDeadlineAfter(30, TimeUnit.SECONDS)
                            .getManifest(io.butterfly.proto.registry.v1.GetManifestRequest.newBuilder().setModelId(modelId).build());
                    recordSuccess(started);
                    return ManifestMessages.fromProto(m);
                } catch (StatusRuntimeException e) {
                    failure = e;
                    if (transientStatus(GrpcErrors.kindOf(e.getStatus().getCode()))) {
                        recordFailure(started, e);
                    } else {
                        recordSuccess(started); // it answered: the request is the problem (e.g. NOT_FOUND)
                        throw e;
                    }
                } catch (Throwable e) {
                    releasePermission();
                    throw e;
                }
            }
            if (retries[0] >= retry.maxTransientRetries()) {
                throw new ButterflyException(ErrorCode.TIMEOUT, ErrorKind.UNAVAILABLE, "the manifest of model " + modelId
                        + " could not be fetched from the registry after " + (retries[0] + 1) + " attempts: "
                        + failure.getStatus().getCode() + " " + failure.getStatus().getDescription(), Map.of("model_id", modelId),
                        failure);
            }
            long wait = backoffMillis(++retries[0]);
            log.warn("fetching the manifest of {} failed ({}); retry {} in {} ms", modelId, failure.getStatus(), retries[0], wait);
            throw new Retries.TryAgain(failure, wait);
        });
    }

    private static boolean transientStatus(ErrorKind code) {
        return code == ErrorKind.UNAVAILABLE || code == ErrorKind.DEADLINE_EXCEEDED || code == ErrorKind.ABORTED
                || code == ErrorKind.RESOURCE_EXHAUSTED;
    }

    /** The wait before retry {@code attempt} (1 = the first): exponential, between half of it and all of it. */
    private long backoffMillis(int attempt) {
        return new Backoff(retry.initialBackoff(), retry.maxBackoff(), Backoff.Jitter.EQUAL).millis(attempt - 1);
    }

    /** Bytes received from the registry (and verified per chunk) by this downloader so far. */
    public long bytesFetched() {
        return bytesFetched.get();
    }

    /** {@link #stream} with retries: corrupted data up to maxRefetches times, transient failures up to maxTransientRetries. */
    private String streamWithRetries(String modelId, String name, long size, Path part, FetchProgress listener)
            throws IOException {
        int[] refetches = {0};
        int[] transientRetries = {0};
        return Retries.untilDone("registry-fetch", () -> {
            ButterflyException failure;
            boolean retryable;
            int attempt;
            if (breaker != null && !breaker.tryAcquirePermission()) {
                failure = new ButterflyException(ErrorCode.TIMEOUT, ErrorKind.UNAVAILABLE,
                        "the registry's circuit breaker is open after repeated failures; not fetching " + name
                                + " of model " + modelId + " until it half-opens");
                if (breaker.getState() == CircuitBreaker.State.HALF_OPEN) {
                    // Another fetch is the probe, a whole file's stream that may take minutes: wait for its
                    // outcome without spending a retry (this file gave up while the registry was answering).
                    retryable = true;
                    attempt = transientRetries[0] + 1;
                } else {
                    retryable = transientRetries[0] < retry.maxTransientRetries();
                    attempt = ++transientRetries[0];
                }
            } else {
                long started = System.nanoTime();
                long kept = Files.exists(part) ? Files.size(part) : 0;
                try {
                    String digest = stream(modelId, name, size, part, listener);
                    recordSuccess(started);
                    return digest;
                } catch (ButterflyException e) {
                    failure = e;
                    ErrorKind st = e.kind();
                    boolean corrupt = st == ErrorKind.DATA_LOSS;
                    // A registry stopping mid-stream resets it (CANCELLED) although this side never cancelled.
                    boolean goneAway = st == ErrorKind.CANCELLED && !Thread.currentThread().isInterrupted();
                    boolean transientFailure = transientStatus(st) || goneAway;
                    if (transientFailure) {
                        recordFailure(started, e);
                        if (Files.exists(part) && Files.size(part) > kept) {
                            // It got further this time: the retry budget is for a registry that stays away, not
                            // for a slow or flaky link that keeps making progress between drops.
                            transientRetries[0] = 0;
                        }
                    } else {
                        recordSuccess(started); // the registry answered: it is up, the data or request is the problem
                    }
                    if (corrupt && refetches[0] < retry.maxRefetches()) {
                        retryable = true;
                        attempt = ++refetches[0];
                    } else if (transientFailure && transientRetries[0] < retry.maxTransientRetries()) {
                        retryable = true;
                        attempt = ++transientRetries[0];
                    } else {
                        retryable = false;
                        attempt = 0;
                    }
                } catch (Throwable e) {
                    // A local failure (disk, interruption, an Error): the registry is not to blame, but the permission
                    // taken must go back, or a half-open breaker (and every fetch waiting on it) waits for ever.
                    releasePermission();
                    throw e;
                }
            }
            if (!retryable) {
                throw failure;
            }
            long wait = backoffMillis(attempt);
            log.warn("fetching {} of {} failed ({}: {}); retry {} from byte {} in {} ms", name, modelId, failure.code(),
                    failure.getMessage(), attempt, Files.exists(part) ? Files.size(part) : 0, wait);
            throw new Retries.TryAgain(failure, wait);
        });
    }

    private void recordSuccess(long startedNanos) {
        if (breaker != null) {
            breaker.onSuccess(System.nanoTime() - startedNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void releasePermission() {
        if (breaker != null) {
            breaker.releasePermission();
        }
    }

    private void recordFailure(long startedNanos, Throwable t) {
        if (breaker != null) {
            breaker.onError(System.nanoTime() - startedNanos, TimeUnit.NANOSECONDS, t);
        }
    }

    private static ManifestFile find(Manifest manifest, String name) {
        for (ManifestFile f : manifest.files()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new ButterflyException(ErrorCode.WEIGHT_FILE_NOT_FOUND, ErrorKind.NOT_FOUND,
                "file " + name + " is not in the manifest of model " + manifest.modelId(),
                Map.of("file", name, "model_id", manifest.modelId()), null);
    }

    private VerifiedFile fetch(String modelId, ManifestFile file, Path dir, FetchProgress listener) throws IOException {
        String name = file.name();
        if (name.isEmpty() || name.contains("/") || name.contains("\\") || name.equals(".") || name.equals("..")) {
            throw new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT,
                    "manifest of model " + modelId + " names an unsafe file: '" + name + "'");
        }
        String expected = file.checksum().toLowerCase(java.util.Locale.ROOT);
        long size = file.sizeBytes();
        Path target = dir.resolve(name);
        Path part = dir.resolve(name + ".part");

        if (Files.isRegularFile(target)) {
            if (Files.size(target) == size && Sha256.hexOfFile(target).equals(expected)) {
                log.debug("{} already present and verified", target);
                listener.onProgress(name, size, size);
                return new VerifiedFile(target, expected, size);
            }
            log.info("{} present but does not match the manifest; fetching it again", target);
            Files.delete(target);
        }
        if (sharedStore != null && name.endsWith(".safetensors")) {
            Optional<VerifiedFile> inPlace = sharedStore.open(modelId, name, size, expected, listener);
            if (inPlace.isPresent()) {
                return inPlace.get();
            }
        }

        boolean resumed = Files.exists(part) && Files.size(part) > 0;
        if (Files.exists(part) && Files.size(part) > size) {
            Files.delete(part);
            resumed = false;
        }
        String actual = streamWithRetries(modelId, name, size, part, listener);
        long actualSize = Files.size(part);
        if (resumed && (!actual.equals(expected) || actualSize != size)) {
            // The kept prefix may be what is wrong: start over once from byte zero.
            log.warn("{} failed verification after resuming; fetching it from the start", name);
            Files.deleteIfExists(part);
            actual = streamWithRetries(modelId, name, size, part, listener);
            actualSize = Files.size(part);
        }
        if (!actual.equals(expected) || actualSize != size) {
            Files.deleteIfExists(part);
            throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                    "checksum mismatch for " + name + " of model " + modelId + ": expected sha256 " + expected
                            + " (" + size + " bytes), got " + actual + " (" + actualSize + " bytes)",
                    Map.of("file", name, "expected", expected, "actual", actual), null);
        }
        Files.move(part, target, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        listener.onProgress(name, size, size);
        return new VerifiedFile(target, actual, size);
    }

    /**
     * Appends the rest of the file (from the part's length) to {@code part}, verifying every chunk, and
     * returns the SHA-256 of the whole part file. The file's digest is updated as chunks are written, so
     * only a resumed prefix is read back from disk.
     */
    private String stream(String modelId, String name, long size, Path part, FetchProgress listener) throws IOException {
        long offset = Files.exists(part) ? Files.size(part) : 0;
        MessageDigest whole = offset > 0 ? Sha256.digestOfFile(part) : Sha256.newDigest();
        listener.onProgress(name, offset, size);
        if (offset == size && size > 0) {
            return Sha256.toHex(whole.digest());
        }
        FetchFileRequest request = FetchFileRequest.newBuilder()
                .setModelId(modelId)
                .setFileName(name)
                .setOffset(offset)
                .setChunkSize(chunkSize)
                .setFeatures(compression ? ChunkCodec.FEATURE_COMPRESSION : 0)
                .build();
        Context.CancellableContext ctx = Context.current().withCancellation();
        Context previous = ctx.attach();
        try (OutputStream out = Files.newOutputStream(part, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            Iterator<FileChunk> chunks = registry
                    .withDeadlineAfter(fileDeadline.toMillis(), TimeUnit.MILLISECONDS)
                    .fetchFile(request);
            long position = offset;
            boolean last = false;
            while (!last && chunks.hasNext()) {
                FileChunk chunk = chunks.next();
                if (chunk.getOffset() != position) {
                    throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                            "chunk of " + name + " at offset " + chunk.getOffset() + " where " + position + " was expected");
                }
                // The received bytes are checked, hashed and written in place (no copy out of the message).
                ByteString data = chunk.getCompression() == ChunkCompression.CHUNK_COMPRESSION_ZSTD
                        ? UnsafeByteOperations.unsafeWrap(ChunkCodec.decompress(chunk.getData().toByteArray(),
                                chunk.getUncompressedSize(), Math.min(Math.max(chunkSize, ChunkCodec.MIN_CHUNK_BYTES), size - position), name, position))
                        : chunk.getData();
                String mismatch = chunkMismatch(chunk, data);
                if (mismatch != null) {
                    throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                            "chunk of " + name + " at offset " + position + " does not match its checksum: " + mismatch,
                            Map.of("file", name, "offset", Long.toString(position)), null);
                }
                if (position + data.size() > size) {
                    throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                            name + " is longer than the manifest's " + size + " bytes");
                }
                if (data.isEmpty() && !chunk.getLast()) {
                    // Progress-free chunks would keep a stream alive until its deadline, then its retries'.
                    throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.DATA_LOSS,
                            "empty chunk of " + name + " at offset " + position + " that is not the last");
                }
                data.writeTo(out);
                whole.update(data.asReadOnlyByteBuffer());
                bytesFetched.addAndGet(data.size());
                position += data.size();
                last = chunk.getLast();
                listener.onProgress(name, position, size);
            }
            if (position != size) {
                throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                        "stream of " + name + " ended at " + position + " of " + size + " bytes");
            }
            return Sha256.toHex(whole.digest());
        } catch (StatusRuntimeException e) {
            throw GrpcErrors.fromRemote(e, "fetching " + name + " of model " + modelId);
        } finally {
            ctx.detach(previous);
            ctx.cancel(null);
        }
    }

    /**
     * The per-chunk transit check: CRC32C where the registry sends it (memory speed, so the file's bytes
     * are SHA-256'd once here, for the whole-file check), else the chunk's SHA-256. Null when intact, else
     * both checksums.
     */
    private static String chunkMismatch(FileChunk chunk, ByteString data) {
        if (chunk.hasCrc32C()) {
            CRC32C crc = new CRC32C();
            crc.update(data.asReadOnlyByteBuffer());
            return (int) crc.getValue() == chunk.getCrc32C() ? null
                    : String.format("expected crc32c %08x, got %08x", chunk.getCrc32C(), crc.getValue());
        }
        String actual = Sha256.hex(data.toByteArray());
        return actual.equals(chunk.getSha256().toLowerCase(java.util.Locale.ROOT)) ? null
                : "expected sha256 " + chunk.getSha256() + ", got " + actual;
    }
}
