package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.worker.config.UnsafeFaultInjectionProperties;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/**
 * Fault injection flips exactly one bit in about the chosen fraction of outputs, never in the engine's own buffer, and
 * is refused unless explicitly enabled.
 */
class OutputCorruptionTest {

    @Test
    void aboutTheChosenFractionOfOutputsGetOneBitFlipped() {
        OutputCorruption corruption = new OutputCorruption(0.02, 9);
        int outputs = 5000;
        long flipped = 0;
        for (int i = 0; i < outputs; i++) {
            StageResult result = result(i);
            byte[] before = bytes(result.littleEndianFloats());
            StageResult out = corruption.apply(result);
            byte[] after = bytes(out.littleEndianFloats());
            assertThat(bytes(result.littleEndianFloats())).isEqualTo(before); // the original is untouched
            int bits = 0;
            for (int j = 0; j < before.length; j++) {
                bits += Integer.bitCount((before[j] ^ after[j]) & 0xff);
            }
            assertThat(bits).isIn(0, 1);
            flipped += bits;
            assertThat(out.shape()).isEqualTo(result.shape());
        }
        assertThat(flipped).isEqualTo(corruption.corrupted()).isBetween(60L, 140L); // 100 expected, 2 % of 5000
        assertThat(OutputCorruption.NONE.apply(result(1))).isNotNull();
        assertThat(OutputCorruption.NONE.corrupted()).isZero();
    }

    @Test
    void theSettingIsRefusedUnlessExplicitlyEnabled() {
        assertThatThrownBy(() -> new UnsafeFaultInjectionProperties(false, 0.02, 1, false, -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("butterfly.worker.unsafe-fault-injection.enabled=true");
        assertThatThrownBy(() -> new UnsafeFaultInjectionProperties(true, 1.5, 1, false, -1))
                .isInstanceOf(IllegalArgumentException.class);
        new UnsafeFaultInjectionProperties(true, 0.02, 1, false, -1);
        new UnsafeFaultInjectionProperties(false, 0, 1, false, -1);
        assertThatThrownBy(() -> new UnsafeFaultInjectionProperties(false, 0, 1, true, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("misreport-checksums");
        new UnsafeFaultInjectionProperties(true, 0, 1, true, -1);
    }

    private static StageResult result(int seed) {
        ByteBuffer b = ByteBuffer.allocate(4 * 16 * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 64; i++) {
            b.putFloat(seed * 0.5f + i);
        }
        b.flip();
        return new StageResult(b, new long[]{4, 16}, false);
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }
}
