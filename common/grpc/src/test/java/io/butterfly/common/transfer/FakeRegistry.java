package io.butterfly.common.transfer;

import com.google.protobuf.ByteString;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.proto.registry.v1.FileKind;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.registry.v1.WeightFile;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.CRC32C;

/** An in-process registry whose FetchFile streams the given files as told, for the downloader's tests. */
final class FakeRegistry implements AutoCloseable {

    /** Serves one FetchFile call; {@link #send} streams a file honestly. */
    @FunctionalInterface
    interface Serve {
        void fetch(FetchFileRequest request, StreamObserver<FileChunk> response) throws Exception;
    }

    final Map<String, byte[]> files = new LinkedHashMap<>();
    final List<FetchFileRequest> fetches = new CopyOnWriteArrayList<>();
    /** GetManifest calls answered UNAVAILABLE before the manifest is served. */
    final java.util.concurrent.atomic.AtomicInteger manifestOutages = new java.util.concurrent.atomic.AtomicInteger();
    final java.util.concurrent.atomic.AtomicInteger manifestCalls = new java.util.concurrent.atomic.AtomicInteger();
    private final Server server;
    private final ManagedChannel channel;

    FakeRegistry(Serve serve) throws IOException {
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name).addService(new ModelRegistryGrpc.ModelRegistryImplBase() {
            @Override
            public void getManifest(io.butterfly.proto.registry.v1.GetManifestRequest request,
                                    StreamObserver<ModelManifest> response) {
                manifestCalls.incrementAndGet();
                if (manifestOutages.getAndDecrement() > 0) {
                    response.onError(io.grpc.Status.UNAVAILABLE.withDescription("restarting").asRuntimeException());
                } else if (!request.getModelId().equals("tiny")) {
                    response.onError(io.grpc.Status.NOT_FOUND.withDescription("no model " + request.getModelId()).asRuntimeException());
                } else {
                    response.onNext(manifestMessage());
                    response.onCompleted();
                }
            }

            @Override
            public void fetchFile(FetchFileRequest request, StreamObserver<FileChunk> response) {
                fetches.add(request);
                try {
                    serve.fetch(request, response);
                } catch (Exception e) {
                    response.onError(e);
                }
            }
        }).build().start();
        channel = InProcessChannelBuilder.forName(name).build();
    }

    ModelRegistryGrpc.ModelRegistryBlockingStub stub() {
        return ModelRegistryGrpc.newBlockingStub(channel);
    }

    /** Adds a file of {@code size} random bytes. */
    FakeRegistry file(String name, int size) {
        byte[] b = new byte[size];
        new Random(name.hashCode()).nextBytes(b);
        files.put(name, b);
        return this;
    }

    /** A manifest (unsigned: the downloader does not check signatures) of the files, as the registry sends it. */
    ModelManifest manifestMessage() {
        ModelManifest.Builder m = ModelManifest.newBuilder().setModelId("tiny");
        files.forEach((n, b) -> m.addFiles(WeightFile.newBuilder().setName(n).setSizeBytes(b.length)
                .setChecksumAlgorithm("sha256").setChecksum(Sha256.hex(b)).setKind(FileKind.LAYER)));
        return m.build();
    }

    /** {@link #manifestMessage()} as the downloader's callers hold it. */
    Manifest manifest() {
        return ManifestMessages.fromProto(manifestMessage());
    }

    /** Sends chunk {@code index} (of {@code chunkSize}) of the asked file, counted from the request's offset; false past the end. */
    boolean send(FetchFileRequest request, StreamObserver<FileChunk> out, int chunkSize, int index) {
        byte[] all = files.get(request.getFileName());
        long at = request.getOffset() + (long) index * chunkSize;
        if (at >= all.length) {
            return false;
        }
        byte[] data = Arrays.copyOfRange(all, (int) at, (int) Math.min(all.length, at + chunkSize));
        CRC32C crc = new CRC32C();
        crc.update(data);
        out.onNext(FileChunk.newBuilder().setFileName(request.getFileName()).setOffset(at)
                .setData(ByteString.copyFrom(data)).setCrc32C((int) crc.getValue()).setFileSize(all.length)
                .setLast(at + data.length >= all.length).build());
        return true;
    }

    /** Streams the asked file from chunk {@code from} on and completes. */
    void sendFrom(FetchFileRequest request, StreamObserver<FileChunk> out, int chunkSize, int from) {
        for (int i = from; send(request, out, chunkSize, i); i++) {
            // next chunk
        }
        out.onCompleted();
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.shutdownNow();
    }
}
