package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.grpc.Status;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The transient retry budget is for a registry that stays away, not for a link that drops but keeps making progress. */
class ShardDownloaderProgressTest {

    private static final ShardDownloader.RetryPolicy TWO_RETRIES =
            new ShardDownloader.RetryPolicy(0, 2, Duration.ofMillis(1), Duration.ofMillis(2));

    @TempDir
    Path tmp;

    @Test
    void aStreamThatDropsAfterEveryChunkStillCompletes() throws Exception {
        FakeRegistry[] self = new FakeRegistry[1];
        try (FakeRegistry registry = new FakeRegistry((req, out) -> {
            // One chunk, then the connection drops: five drops for a five-chunk file, more than two retries.
            self[0].send(req, out, 1000, 0);
            out.onError(Status.UNAVAILABLE.withDescription("connection reset").asRuntimeException());
        }).file("a.safetensors", 5000)) {
            self[0] = registry;
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(30), 1000, TWO_RETRIES, 1);

            List<Path> paths = downloader.download(registry.manifest(), List.of("a.safetensors"), tmp, null);

            assertThat(paths.get(0)).hasBinaryContent(registry.files.get("a.safetensors"));
            assertThat(registry.fetches).extracting(r -> r.getOffset()).containsExactly(0L, 1000L, 2000L, 3000L, 4000L);
        }
    }

    @Test
    void aRegistryThatNeverSendsAByteIsGivenUpOnAfterTheRetries() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) ->
                out.onError(Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException()))
                .file("a.safetensors", 5000)) {
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(30), 1000, TWO_RETRIES, 1);

            assertThatThrownBy(() -> downloader.download(registry.manifest(), List.of("a.safetensors"), tmp, null))
                    .isInstanceOfSatisfying(ButterflyException.class,
                            e -> assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE));
            assertThat(registry.fetches).hasSize(3); // the first try and two retries
        }
    }

    @Test
    void emptyChunksThatAreNotTheLastAreRefused() throws Exception {
        try (FakeRegistry registry = new FakeRegistry((req, out) -> {
            for (int i = 0; i < 1000; i++) {
                out.onNext(io.butterfly.proto.registry.v1.FileChunk.newBuilder().setFileName(req.getFileName())
                        .setOffset(req.getOffset()).setCrc32C(0).setFileSize(5000).build());
            }
            out.onCompleted();
        }).file("a.safetensors", 5000)) {
            ShardDownloader downloader = new ShardDownloader(registry.stub(), Duration.ofSeconds(30), 1000, TWO_RETRIES, 1);

            assertThatThrownBy(() -> downloader.download(registry.manifest(), List.of("a.safetensors"), tmp, null))
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.kind()).isEqualTo(ErrorKind.DATA_LOSS);
                        assertThat(e.getMessage()).contains("empty chunk of a.safetensors at offset 0");
                    });
        }
    }
}
