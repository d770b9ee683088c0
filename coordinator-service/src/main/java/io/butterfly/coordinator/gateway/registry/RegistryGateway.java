package io.butterfly.coordinator.gateway.registry;

import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.coordinator.model.ModelImportFailedException;
import io.butterfly.coordinator.model.ModelRegistry;
import io.butterfly.coordinator.model.RegistryUnavailableException;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The model registry over gRPC: manifests, and files fetched in verified chunks by the shared downloader. */
public final class RegistryGateway implements ModelRegistry, AutoCloseable {

    private final ManagedChannel channel;

    /** @param channel to the registry, owned from now on (closed with this gateway) */
    public RegistryGateway(ManagedChannel channel) {
        this.channel = channel;
    }

    @Override
    public Manifest manifest(String modelId) {
        try {
            return ManifestMessages.fromProto(registry().withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getManifest(GetManifestRequest.newBuilder().setModelId(modelId).build()));
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == io.grpc.Status.Code.FAILED_PRECONDITION) {
                throw new ModelImportFailedException(e.getStatus().getDescription(), e); // the registry's own cause
            }
            throw unavailable(e);
        }
    }

    @Override
    public void download(Manifest manifest, List<String> files, Path dir) throws IOException {
        try {
            new ShardDownloader(registry()).download(manifest, files, dir, (file, done, total) -> { });
        } catch (StatusRuntimeException e) {
            throw unavailable(e);
        }
    }

    /**
     * A stub whose calls wait, within their deadlines, for the registry to be reachable. The coordinator and the
     * registry start together, so its first call (the catalog's warm-up) may come before the registry serves; grpc
     * then holds the channel in TRANSIENT_FAILURE and reconnects after a backoff that grows to two minutes, failing
     * every call at once in the meantime with that first call's error, long after the registry came up. Each call
     * here is wanted now: reconnect at once, and wait for the connection rather than fail on the stale error.
     */
    private ModelRegistryGrpc.ModelRegistryBlockingStub registry() {
        if (channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
            channel.resetConnectBackoff();
        }
        return ModelRegistryGrpc.newBlockingStub(channel).withWaitForReady();
    }

    private static RegistryUnavailableException unavailable(StatusRuntimeException e) {
        return new RegistryUnavailableException(e.toString(), e);
    }

    @Override
    public void close() {
        GrpcChannels.close(channel);
    }
}
