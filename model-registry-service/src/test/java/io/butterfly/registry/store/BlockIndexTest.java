package io.butterfly.registry.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/** The registry's per-block checksums of its store: CRC32C, and an older SHA-256 index migrated only if the bytes still match it. */
class BlockIndexTest {

    private static final int BLOCK = BlockIndex.DEFAULT_BLOCK_BYTES;

    @TempDir
    Path root;

    @Test
    void everyBlockGetsTheCrc32cOfItsBytes() throws Exception {
        byte[] bytes = randomBytes(2 * BLOCK + 123, 1);
        Path f = Files.write(root.resolve("layer_000.safetensors"), bytes);
        List<String> sums = BlockIndex.checksumBlocks(f, BLOCK, BlockIndex.CRC32C);
        assertThat(sums).hasSize(3);
        for (int b = 0; b < 3; b++) {
            CRC32C crc = new CRC32C();
            crc.update(bytes, b * BLOCK, Math.min(BLOCK, bytes.length - b * BLOCK));
            assertThat(sums.get(b)).isEqualTo(String.format("%08x", crc.getValue()));
        }
        BlockIndex index = new BlockIndex(BLOCK, BlockIndex.CRC32C, Map.of(f.getFileName().toString(), sums));
        assertThat(index.checksum(Arrays.copyOf(bytes, BLOCK))).isEqualTo(sums.get(0));
        bytes[5] ^= 1;
        assertThat(index.checksum(Arrays.copyOf(bytes, BLOCK))).isNotEqualTo(sums.get(0));
    }

    @Test
    void anOlderSha256IndexIsMigratedWhenTheBytesStillMatchIt() throws Exception {
        ModelStore store = new ModelStore(root);
        Manifest manifest = storedModel(store, false);
        BlockIndex index = store.blockIndex(manifest);
        assertThat(index.algorithm()).isEqualTo(BlockIndex.CRC32C);
        assertThat(index.files().get("layer_000.safetensors")).hasSize(2);
        // written back: a new store instance reads the CRC32C index as it is
        assertThat(Files.readString(root.resolve("m/" + ModelStore.BLOCK_INDEX_FILE))).contains("crc32c");
    }

    @Test
    void anOlderSha256IndexOfBytesThatChangedIsRefusedNotReindexed() throws Exception {
        ModelStore store = new ModelStore(root);
        Manifest manifest = storedModel(store, true);
        assertThatThrownBy(() -> store.blockIndex(manifest))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("registry store corrupted")
                .hasMessageContaining("layer_000.safetensors block 1");
    }

    @Test
    void anUnreadableBlockIndexIsRefusedAsSuchNotAsAnInternalError() throws Exception {
        ModelStore store = new ModelStore(root);
        Manifest manifest = storedModel(store, false);
        Path index = root.resolve("m/" + ModelStore.BLOCK_INDEX_FILE);
        Files.writeString(index, Files.readString(index).substring(0, 40)); // cut short
        assertThatThrownBy(() -> store.open(manifest, root.resolve("m/layer_000.safetensors")))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining(ModelStore.BLOCK_INDEX_FILE)
                .hasMessageContaining("m");
    }

    @Test
    void aBlockIndexWithoutAPositiveBlockSizeIsRefusedNotLoopedOver() throws Exception {
        ModelStore store = new ModelStore(root);
        Manifest manifest = storedModel(store, false);
        Files.writeString(root.resolve("m/" + ModelStore.BLOCK_INDEX_FILE), JsonMapper.builder().build()
                .writeValueAsString(Map.of("blockBytes", 0, "files", Map.of("layer_000.safetensors", List.of("00")))));
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(10),
                () -> assertThatThrownBy(() -> store.blockIndex(manifest))
                        .isInstanceOf(UncheckedIOException.class)
                        .hasMessageContaining(ModelStore.BLOCK_INDEX_FILE));
    }

    /** Model "m" stored with a SHA-256 block index as written before CRC32C; optionally one byte flipped since. */
    private Manifest storedModel(ModelStore store, boolean flipAfterIndexing) throws Exception {
        Path dir = Files.createDirectories(root.resolve("m"));
        byte[] bytes = randomBytes(BLOCK + 77, 2);
        Files.write(dir.resolve("layer_000.safetensors"), bytes);
        List<String> sha = new ArrayList<>();
        sha.add(Sha256.hex(Arrays.copyOf(bytes, BLOCK)));
        sha.add(Sha256.hex(Arrays.copyOfRange(bytes, BLOCK, bytes.length)));
        Files.writeString(dir.resolve(ModelStore.BLOCK_INDEX_FILE), JsonMapper.builder().build().writeValueAsString(
                Map.of("blockBytes", BLOCK, "files", Map.of("layer_000.safetensors", sha))));
        if (flipAfterIndexing) {
            bytes[BLOCK + 3] ^= 0x10;
            Files.write(dir.resolve("layer_000.safetensors"), bytes);
        }
        ManifestFile file = new ManifestFile("layer_000.safetensors", bytes.length, "sha256", Sha256.hex(bytes),
                FileKind.LAYER, 0, 1, "safetensors");
        return new Manifest("m", "llama", "1", 1, 1, 8, 8, "F32", List.of(file), "00", 0, null, null);
    }

    private static byte[] randomBytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }
}
