package io.butterfly.worker.gateway;

import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.OneWayStreams;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.transfer.RegistryCircuitBreaker;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.common.manifest.FetchProgress;
import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.common.transfer.SharedStore;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.partition.ShardSource;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * This worker's line to the model registry: manifests and shard files through the shared {@link ShardDownloader}
 * (chunks verified, resumable, retried), behind one circuit breaker for the worker's life.
 */
public class RegistryGateway implements ShardSource {

    private final OneWayStreams.Channels channels;
    private final int parallelFiles;
    private final boolean compression;
    private final Path sharedStore;
    private final CircuitBreaker breaker;
    private final ShardDownloader.RetryPolicy retry;

    /**
     * @param breakerFailuresToOpen consecutive failed calls after which the registry is left alone for
     *                              {@code breakerOpenFor}
     * @param parallelFiles         shard files fetched at once
     * @param compression           offer the COMPRESSION feature (zstd chunks)
     * @param sharedStore           the registry's store as this worker sees it, whose files are verified in place
     *                              instead of streamed; null: every file is streamed
     */
    public RegistryGateway(OneWayStreams.Channels channels, int breakerFailuresToOpen, Duration breakerOpenFor,
                           int parallelFiles, boolean compression, Path sharedStore) {
        this(channels, breakerFailuresToOpen, breakerOpenFor, parallelFiles, compression, sharedStore,
                ShardDownloader.RetryPolicy.DEFAULT);
    }

    /** @param retry how a failed manifest call or file stream is retried */
    public RegistryGateway(OneWayStreams.Channels channels, int breakerFailuresToOpen, Duration breakerOpenFor,
                           int parallelFiles, boolean compression, Path sharedStore, ShardDownloader.RetryPolicy retry) {
        this.retry = retry;
        this.channels = channels;
        this.parallelFiles = parallelFiles;
        this.compression = compression;
        this.sharedStore = sharedStore;
        // One breaker for the worker's life: a registry that keeps failing is left alone for a while
        // instead of being hammered by every retry of every file.
        this.breaker = RegistryCircuitBreaker.create("registry", breakerFailuresToOpen, breakerOpenFor);
    }

    @Override
    public Fetch from(Endpoint registry) {
        ShardDownloader downloader = new ShardDownloader(
                ModelRegistryGrpc.newBlockingStub(channels.get(registry.host(), registry.grpcPort())),
                ShardDownloader.DEFAULT_FILE_DEADLINE, ShardDownloader.DEFAULT_CHUNK_SIZE,
                retry, parallelFiles)
                .withCircuitBreaker(breaker).withCompression(compression);
        SharedStore shared = sharedStore == null ? null : new SharedStore(sharedStore);
        if (shared != null) {
            downloader.withSharedStore(shared);
        }
        return new Fetch() {
            @Override
            public Manifest manifest(String modelId) {
                try {
                    return downloader.manifest(modelId);
                } catch (StatusRuntimeException e) {
                    throw GrpcErrors.fromRemote(e, "registry");
                }
            }

            @Override
            public List<VerifiedFile> download(Manifest manifest, List<String> files, Path dir, FetchProgress progress)
                    throws IOException {
                try {
                    return downloader.downloadVerified(manifest, files, dir, progress);
                } catch (StatusRuntimeException e) {
                    throw GrpcErrors.fromRemote(e, "registry");
                }
            }

            @Override
            public long bytesStreamed() {
                return downloader.bytesFetched();
            }

            @Override
            public long bytesVerifiedInPlace() {
                return shared == null ? 0 : shared.bytesVerified();
            }
        };
    }
}
