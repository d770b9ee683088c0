package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.manifest.VerifiedFile;
import io.grpc.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Weight files used in place in the registry's store: verified through the channel the caller then reads, and
 * streamed from the registry whenever the shared copy is missing or differs.
 */
class SharedStoreTest {

    private static final ShardDownloader.RetryPolicy NO_RETRIES =
            new ShardDownloader.RetryPolicy(0, 0, Duration.ofMillis(1), Duration.ofMillis(2));

    @TempDir
    Path tmp;

    private Path store() {
        return tmp.resolve("store");
    }

    private Path local() {
        return tmp.resolve("local");
    }

    /** Puts the registry's bytes of {@code name} into the shared store (model "tiny"). */
    private Path share(FakeRegistry registry, String name) throws IOException {
        Path file = store().resolve("tiny").resolve(name);
        Files.createDirectories(file.getParent());
        Files.write(file, registry.files.get(name));
        return file;
    }

    private ShardDownloader downloader(FakeRegistry registry, SharedStore shared) {
        return downloader(registry, shared, 1);
    }

    private ShardDownloader downloader(FakeRegistry registry, SharedStore shared, int parallelFiles) {
        return new ShardDownloader(registry.stub(), Duration.ofSeconds(30), 1000, NO_RETRIES, parallelFiles)
                .withSharedStore(shared);
    }

    private static FakeRegistry honestRegistry() throws IOException {
        FakeRegistry[] self = new FakeRegistry[1];
        FakeRegistry registry = new FakeRegistry((req, out) -> self[0].sendFrom(req, out, 1000, 0));
        self[0] = registry;
        return registry;
    }

    @Test
    void aMatchingFileIsVerifiedAndReadInPlaceWithoutAByteStreamed() throws Exception {
        try (FakeRegistry registry = honestRegistry().file("a.safetensors", 5000)) {
            Path shared = share(registry, "a.safetensors");
            SharedStore store = new SharedStore(store());

            List<VerifiedFile> files = downloader(registry, store).downloadVerified(registry.manifest(),
                    List.of("a.safetensors"), local(), null);

            VerifiedFile f = files.get(0);
            assertThat(f.path()).isEqualTo(shared);
            assertThat(f.sha256()).isEqualTo(registry.manifest().files().get(0).checksum());
            assertThat(f.channel()).isNotNull();
            assertThat(f.channel().isOpen()).isTrue();
            ByteBuffer read = ByteBuffer.allocate(5000);
            f.channel().read(read, 0);
            assertThat(read.array()).isEqualTo(registry.files.get("a.safetensors"));
            assertThat(registry.fetches).isEmpty();
            assertThat(store.bytesVerified()).isEqualTo(5000);
            assertThat(local().resolve("a.safetensors")).doesNotExist();

            f.closeChannel();
            assertThat(f.channel().isOpen()).isFalse();
        }
    }

    @Test
    void aBitFlippedInTheSharedCopyIsNeverUsedTheFileIsStreamedInstead() throws Exception {
        try (FakeRegistry registry = honestRegistry().file("a.safetensors", 5000)) {
            Path shared = share(registry, "a.safetensors");
            byte[] flipped = Files.readAllBytes(shared);
            flipped[4321] ^= 0x01;
            Files.write(shared, flipped);

            VerifiedFile f = downloader(registry, new SharedStore(store())).downloadVerified(registry.manifest(),
                    List.of("a.safetensors"), local(), null).get(0);

            assertThat(f.path()).isEqualTo(local().resolve("a.safetensors"));
            assertThat(f.channel()).isNull();
            assertThat(f.path()).hasBinaryContent(registry.files.get("a.safetensors"));
            assertThat(registry.fetches).hasSize(1);
            assertThat(openChannelsTo(shared)).isZero();
        }
    }

    @Test
    void aMissingOrTruncatedSharedCopyIsStreamed() throws Exception {
        try (FakeRegistry registry = honestRegistry().file("a.safetensors", 5000).file("b.safetensors", 3000)) {
            Path truncated = share(registry, "b.safetensors");
            Files.write(truncated, Arrays.copyOf(registry.files.get("b.safetensors"), 2999));

            List<VerifiedFile> files = downloader(registry, new SharedStore(store())).downloadVerified(registry.manifest(),
                    List.of("a.safetensors", "b.safetensors"), local(), null);

            assertThat(files).extracting(VerifiedFile::path)
                    .containsExactly(local().resolve("a.safetensors"), local().resolve("b.safetensors"));
            assertThat(files.get(1).path()).hasBinaryContent(registry.files.get("b.safetensors"));
            assertThat(registry.fetches).extracting(r -> r.getFileName()).containsExactly("a.safetensors", "b.safetensors");
        }
    }

    @Test
    void onlyWeightFilesAreUsedInPlace() throws Exception {
        try (FakeRegistry registry = honestRegistry().file("config.json", 300)) {
            share(registry, "config.json");

            VerifiedFile f = downloader(registry, new SharedStore(store())).downloadVerified(registry.manifest(),
                    List.of("config.json"), local(), null).get(0);

            // Read by path by its callers, so it lives in the download directory.
            assertThat(f.path()).isEqualTo(local().resolve("config.json"));
            assertThat(registry.fetches).hasSize(1);
        }
    }

    @ParameterizedTest(name = "{0} file(s) at a time")
    @ValueSource(ints = {1, 2})
    void whenAnotherFileFailsTheChannelsAlreadyOpenAreClosed(int parallelFiles) throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "needs /proc/self/fd to count open files");
        try (FakeRegistry registry = new FakeRegistry((req, out) ->
                out.onError(Status.NOT_FOUND.withDescription("gone").asRuntimeException()))
                .file("a.safetensors", 5000).file("b.safetensors", 3000)) {
            Path shared = share(registry, "a.safetensors");

            assertThatThrownBy(() -> downloader(registry, new SharedStore(store()), parallelFiles).downloadVerified(
                    registry.manifest(), List.of("a.safetensors", "b.safetensors"), local(), null))
                    .isInstanceOf(ButterflyException.class);
            assertThat(openChannelsTo(shared)).isZero();
        }
    }

    @Test
    void aDownloaderAskedForPathsLeavesNoChannelOpen() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/fd")), "needs /proc/self/fd to count open files");
        try (FakeRegistry registry = honestRegistry().file("a.safetensors", 5000)) {
            Path shared = share(registry, "a.safetensors");

            List<Path> paths = downloader(registry, new SharedStore(store())).download(registry.manifest(),
                    List.of("a.safetensors"), local(), null);

            assertThat(paths).containsExactly(shared);
            assertThat(openChannelsTo(shared)).isZero();
        }
    }

    @Test
    void aModelIdThatIsNotOneSafeSegmentIsNeverLookedUp() throws Exception {
        Files.createDirectories(tmp.resolve("escaped"));
        Files.write(tmp.resolve("escaped").resolve("a.safetensors"), new byte[] {1, 2, 3});
        SharedStore store = new SharedStore(store());

        assertThat(store.open("../escaped", "a.safetensors", 3, "00", (f, d, t) -> { })).isEmpty();
    }

    /** Open file descriptors of this process on {@code file}. */
    private static long openChannelsTo(Path file) throws IOException {
        Path real = file.toRealPath();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).equals(real);
                } catch (IOException e) {
                    return false; // closed meanwhile
                }
            }).count();
        }
    }
}
