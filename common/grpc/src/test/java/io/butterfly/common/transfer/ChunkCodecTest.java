package io.butterfly.common.transfer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ChunkCodecTest {

    @Test
    void compressibleChunksRoundTripAndShrink() {
        Random random = new Random(7);
        for (int round = 0; round < 50; round++) {
            // Text-like data: a small alphabet repeats, so zstd always wins.
            byte[] raw = new byte[1 + random.nextInt(200_000)];
            for (int i = 0; i < raw.length; i++) {
                raw[i] = (byte) ('a' + random.nextInt(4));
            }
            byte[] packed = ChunkCodec.compress(raw, 3).orElseThrow();
            assertThat(packed.length).isLessThan(raw.length);
            assertThat(ChunkCodec.decompress(packed, raw.length, raw.length, "f", 0)).isEqualTo(raw);
        }
    }

    @Test
    void incompressibleChunksAreSentAsTheyAre() {
        byte[] raw = new byte[1 << 16];
        new Random(1).nextBytes(raw);
        assertThat(ChunkCodec.compress(raw, 3)).isEmpty();
    }

    @Test
    void aMalformedFrameIsACorruptChunkNotACrash() {
        byte[] packed = ChunkCodec.compress("hello hello hello hello hello hello".repeat(50)
                .getBytes(StandardCharsets.UTF_8), 3).orElseThrow();
        byte[] garbled = Arrays.copyOf(packed, packed.length);
        garbled[garbled.length / 2] ^= 0x5a;
        byte[] truncated = Arrays.copyOf(packed, packed.length / 2);
        for (byte[] bad : new byte[][] {truncated, "not zstd at all".getBytes(StandardCharsets.UTF_8)}) {
            assertThatThrownBy(() -> ChunkCodec.decompress(bad, 1750, 1750, "layer-0.safetensors", 4096))
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
                        assertThat(e.getMessage()).contains("layer-0.safetensors", "4096");
                    });
        }
        // A flipped bit inside the frame either fails to decode or decodes to other bytes the chunk checksum
        // catches; it never yields the original silently or crashes.
        try {
            byte[] out = ChunkCodec.decompress(garbled, 1750, 1750, "f", 0);
            assertThat(out).hasSize(1750);
        } catch (ButterflyException e) {
            assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
        }
    }

    @Test
    void aClaimedSizeBeyondTheFileIsRefusedBeforeDecompressing() {
        byte[] packed = ChunkCodec.compress(new byte[100_000], 3).orElseThrow();
        assertThatThrownBy(() -> ChunkCodec.decompress(packed, 100_000, 10, "f", 0))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH));
        assertThatThrownBy(() -> ChunkCodec.decompress(packed, 50, 100_000, "f", 0))
                .isInstanceOf(ButterflyException.class);
    }
}
