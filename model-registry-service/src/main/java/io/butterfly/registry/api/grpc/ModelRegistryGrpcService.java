package io.butterfly.registry.api.grpc;

import io.butterfly.common.grpc.ManifestMessages;
import com.google.protobuf.UnsafeByteOperations;
import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.transfer.ChunkCodec;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.registry.v1.ChunkCompression;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ListModelsRequest;
import io.butterfly.proto.registry.v1.ListModelsResponse;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.store.BlockIndex;
import io.butterfly.registry.store.ModelStore;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.time.Duration;
import java.util.Arrays;
import java.util.zip.CRC32C;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * gRPC edge of the registry: manifests and chunked file transfer. Each chunk carries its CRC32C (the transit
 * check); the client verifies chunks, and the whole file's SHA-256 against the manifest, and refuses what does
 * not match.
 */
public class ModelRegistryGrpcService extends ModelRegistryGrpc.ModelRegistryImplBase {

    /** The smallest chunk served, whatever a request asks. */
    static final int MIN_CHUNK_BYTES = ChunkCodec.MIN_CHUNK_BYTES;

    private static final Logger log = LoggerFactory.getLogger(ModelRegistryGrpcService.class);
    /**
     * How long a chunk waits between looks at the transport's flow control: 50 us doubling to 1 ms. Capped low: the
     * reader frees its window within milliseconds, and every millisecond slept past that is transfer time lost (a
     * 20 ms cap cost up to half of the bandwidth on a busy machine).
     */
    private static final Backoff READY_POLL = Backoff.exponential(Duration.ofNanos(50_000), Duration.ofMillis(1));

    private final ModelCatalog catalog;
    private final int maxChunkBytes;
    private final int zstdLevel;

    /** Serves uncompressed chunks of at most {@code maxChunkBytes}. */
    public ModelRegistryGrpcService(ModelCatalog catalog, int maxChunkBytes) {
        this(catalog, maxChunkBytes, 0);
    }

    /**
     * @param maxChunkBytes the largest chunk served (clients may ask for less)
     * @param zstdLevel     zstd level of chunks sent to clients that offer COMPRESSION (0: never compress)
     */
    public ModelRegistryGrpcService(ModelCatalog catalog, int maxChunkBytes, int zstdLevel) {
        this.catalog = catalog;
        this.maxChunkBytes = maxChunkBytes;
        this.zstdLevel = zstdLevel;
    }

    @Override
    public void listModels(ListModelsRequest request, StreamObserver<ListModelsResponse> response) {
        ListModelsResponse.Builder out = ListModelsResponse.newBuilder();
        catalog.list().forEach(m -> out.addModels(ManifestMessages.toProto(m)));
        response.onNext(out.build());
        response.onCompleted();
    }

    @Override
    public void getManifest(GetManifestRequest request, StreamObserver<ModelManifest> response) {
        response.onNext(ManifestMessages.toProto(catalog.get(request.getModelId())));
        response.onCompleted();
    }

    @Override
    public void fetchFile(FetchFileRequest request, StreamObserver<FileChunk> response) {
        ModelCatalog.StoredFile stored = catalog.file(request.getModelId(), request.getFileName());
        String name = stored.file().name();
        long size = stored.file().sizeBytes();
        long offset = request.getOffset();
        if (offset < 0 || offset > size) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "offset " + offset + " is outside " + name + " (" + size + " bytes)",
                    Map.of("field", "offset", "file", name), null);
        }
        // A floor too: a client asking for 1-byte chunks would cost the registry a message per byte.
        int chunkSize = request.getChunkSize() <= 0 ? maxChunkBytes
                : Math.min(Math.max(request.getChunkSize(), MIN_CHUNK_BYTES), maxChunkBytes);
        // Compression only when both sides have the feature (docs/bootstrap-protocol.md §7.2).
        boolean compress = zstdLevel > 0 && (request.getFeatures() & ChunkCodec.FEATURE_COMPRESSION) != 0;
        ServerCallStreamObserver<FileChunk> call = response instanceof ServerCallStreamObserver<FileChunk> s ? s : null;
        ModelStore.OpenFile open;
        try {
            open = catalog.open(stored);
        } catch (UncheckedIOException e) {
            throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                    "cannot serve " + name + " of " + request.getModelId() + ": " + e.getCause().getMessage(),
                    Map.of("file", name), e);
        } catch (NoSuchFileException e) {
            throw new ButterflyException(ErrorCode.WEIGHT_FILE_NOT_FOUND, ErrorKind.NOT_FOUND,
                    name + " of " + request.getModelId() + " is missing from the store", Map.of("file", name), e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (open) {
            FileChannel ch = open.channel();
            if (ch.size() != size) {
                log.warn("{} of {} is {} bytes on disk, the manifest says {}", name, request.getModelId(), ch.size(), size);
            }
            // Read whole blocks and check each against its checksum recorded at import before any of it is sent.
            BlockIndex index = open.index();
            List<String> blockHashes = index.files().get(name);
            int blockBytes = index.blockBytes();
            long position = offset;
            while (position < size) {
                int block = (int) (position / blockBytes);
                long blockStart = (long) block * blockBytes;
                int blockLen = (int) Math.min(blockBytes, size - blockStart);
                ByteBuffer buf = ByteBuffer.allocate(blockLen);
                while (buf.hasRemaining()) {
                    if (ch.read(buf, blockStart + buf.position()) < 0) {
                        throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                                name + " of " + request.getModelId() + " is shorter on disk than its manifest size " + size,
                                Map.of("file", name), null);
                    }
                }
                byte[] blockData = buf.array();
                String actualBlock = index.checksum(blockData);
                String expectedBlock = blockHashes == null || block >= blockHashes.size() ? "" : blockHashes.get(block);
                if (!actualBlock.equals(expectedBlock)) {
                    log.error("refusing to serve {} of {}: block {} changed on disk since import", name,
                            request.getModelId(), block);
                    // Rare, so the whole stored file is hashed here: the refusal names the file's SHA-256 as the
                    // manifest has it and as it is now, besides the block's checksums.
                    String expectedFile = stored.file().checksum();
                    String actualFile = Sha256.hexOfFile(stored.path());
                    throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                            "registry store corrupted: " + name + " of " + request.getModelId() + " has sha256 "
                                    + actualFile + " but its manifest says " + expectedFile + " (block " + block
                                    + ", bytes " + blockStart + ".." + (blockStart + blockLen) + ", has " + index.algorithm()
                                    + " " + actualBlock + " where its import recorded " + expectedBlock + "); not served",
                            Map.of("file", name, "expected", expectedFile, "actual", actualFile), null);
                }
                long blockEnd = blockStart + blockLen;
                while (position < blockEnd) {
                    if (!awaitReady(call)) {
                        return;
                    }
                    int from = (int) (position - blockStart);
                    int n = (int) Math.min(chunkSize, blockEnd - position);
                    boolean wholeBlock = from == 0 && n == blockLen;
                    byte[] data = wholeBlock ? blockData : Arrays.copyOfRange(blockData, from, from + n);
                    FileChunk.Builder chunk = FileChunk.newBuilder()
                            .setFileName(name)
                            .setOffset(position)
                            // The per-chunk transit check; the receiver checks the whole file's SHA-256.
                            .setCrc32C(crc32c(data))
                            .setFileSize(size)
                            .setLast(position + n >= size);
                    Optional<byte[]> packed = compress ? ChunkCodec.compress(data, zstdLevel) : Optional.empty();
                    if (packed.isPresent()) {
                        chunk.setData(UnsafeByteOperations.unsafeWrap(packed.get()))
                                .setCompression(ChunkCompression.CHUNK_COMPRESSION_ZSTD)
                                .setUncompressedSize(n);
                    } else {
                        chunk.setData(UnsafeByteOperations.unsafeWrap(data));
                    }
                    response.onNext(chunk.build());
                    position += n;
                }
            }
        } catch (NoSuchFileException e) {
            throw new ButterflyException(ErrorCode.WEIGHT_FILE_NOT_FOUND, ErrorKind.NOT_FOUND,
                    name + " of " + request.getModelId() + " is missing from the store", Map.of("file", name), e);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        response.onCompleted();
    }

    /** Waits for the transport to take more (flow control); false when the client went away. */
    private static boolean awaitReady(ServerCallStreamObserver<?> call) {
        if (call == null) {
            return true;
        }
        for (int polls = 0; !call.isReady(); polls++) {
            if (call.isCancelled()) {
                return false;
            }
            LockSupport.parkNanos(READY_POLL.nanos(polls));
        }
        return !call.isCancelled();
    }

    private static int crc32c(byte[] data) {
        CRC32C crc = new CRC32C();
        crc.update(data);
        return (int) crc.getValue();
    }
}
