package io.butterfly.common.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.Tensor;
import java.util.Random;
import org.junit.jupiter.api.Test;

class TensorCodecTest {

    @Test
    void float32AndInt64RoundTripForRandomShapes() {
        Random random = new Random(11);
        for (int round = 0; round < 200; round++) {
            int rows = 1 + random.nextInt(8);
            int cols = 1 + random.nextInt(300);
            float[] values = new float[rows * cols];
            for (int i = 0; i < values.length; i++) {
                values[i] = random.nextBoolean() ? (float) random.nextGaussian() : Float.intBitsToFloat(random.nextInt());
            }
            Tensor t = TensorCodec.float32(values, rows, cols);
            assertThat(t.getShapeList()).containsExactly((long) rows, (long) cols);
            float[] back = TensorCodec.toFloats(t, 2, "x");
            for (int i = 0; i < values.length; i++) {
                assertThat(Float.floatToRawIntBits(back[i])).isEqualTo(Float.floatToRawIntBits(values[i]));
            }

            long[] ids = random.longs(cols).toArray();
            assertThat(TensorCodec.toLongs(TensorCodec.int64(ids, cols), 1, "ids")).containsExactly(ids);
        }
    }

    @Test
    void theBytesAreLittleEndianWhateverThePlatform() {
        Tensor t = TensorCodec.float32(new float[]{1.0f}, 1);
        assertThat(t.getData().toByteArray()).containsExactly(0x00, 0x00, (byte) 0x80, 0x3f);
    }

    @Test
    void aShapeThatDoesNotMatchTheValuesIsRefusedWhenBuilding() {
        assertThatThrownBy(() -> TensorCodec.float32(new float[6], 2, 4))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aFlippedBitIsAHashMismatch() {
        Tensor good = TensorCodec.float32(new float[]{1, 2, 3, 4}, 2, 2);
        byte[] data = good.getData().toByteArray();
        data[5] ^= 0x10;
        Tensor bad = good.toBuilder().setData(ByteString.copyFrom(data)).build();
        assertInvalid(bad, DType.FLOAT32, 2, "hash mismatch");
    }

    @Test
    void wrongDtypeRankLengthOrShapeAreInvalidMessages() {
        Tensor good = TensorCodec.float32(new float[]{1, 2, 3, 4}, 2, 2);
        assertInvalid(good, DType.INT64, 2, "dtype");
        assertInvalid(good, DType.FLOAT32, 1, "rank");
        assertInvalid(good.toBuilder().setShape(1, 3).build(), DType.FLOAT32, 2, "needs 24");
        assertInvalid(good.toBuilder().setShape(1, -2).setShape(0, -2).build(), DType.FLOAT32, 2, "invalid shape");
        assertInvalid(good.toBuilder().setShape(0, Long.MAX_VALUE).build(), DType.FLOAT32, 2, "invalid shape");
        // 2^61 + 1 elements of 8 bytes wrap to 8 bytes: the one value carried must not pass for them.
        Tensor one = TensorCodec.int64(new long[]{7}, 1);
        assertInvalid(one.toBuilder().setShape(0, (1L << 61) + 1).build(), DType.INT64, 1, "invalid shape");
    }

    private static void assertInvalid(Tensor t, DType dtype, int rank, String message) {
        assertThatThrownBy(() -> TensorCodec.verify(t, dtype, rank, "hidden states"))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MESSAGE);
                    assertThat(e.kind()).isEqualTo(ErrorKind.INVALID_ARGUMENT);
                })
                .hasMessageContaining("hidden states")
                .hasMessageContaining(message);
    }
}
