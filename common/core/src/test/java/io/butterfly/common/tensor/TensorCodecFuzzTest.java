package io.butterfly.common.tensor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.proto.common.v1.Tensor;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Timeout;

/**
 * Tensors as a stage or the coordinator receives them (docs/testing.md, fuzzing): whatever the dtype, shape, bytes and
 * hash, {@link TensorCodec} either hands back exactly the bytes the shape and dtype call for, their SHA-256 matching,
 * or refuses with {@code INVALID_MESSAGE}; nothing is allocated for what a tensor only claims to hold. Tensors the
 * codec builds survive the wire and decode to the same values, bit for bit.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class TensorCodecFuzzTest {

    private static final DType[] DTYPES = {DType.FLOAT32, DType.INT64, DType.INT32, DType.FLOAT16, DType.BFLOAT16};

    @FuzzTest(maxDuration = "30s")
    void anyReceivedTensorDecodesOrIsRefused(FuzzedDataProvider data) {
        Tensor.Builder t = Tensor.newBuilder().setDtypeValue(data.consumeInt(-1, 6));
        int rank = data.consumeInt(0, 5);
        for (int i = 0; i < rank; i++) {
            t.addShape(data.consumeBoolean() ? data.consumeLong() : data.consumeLong(0, 64));
        }
        byte[] bytes = data.consumeBytes(data.consumeInt(0, 4096));
        t.setData(ByteString.copyFrom(bytes));
        // Mostly the true hash, as an honest sender's: otherwise the shape checks would hardly ever be reached.
        t.setSha256(ByteString.copyFrom(data.consumeBoolean() ? data.consumeBytes(32) : Sha256.digest(bytes)));
        DType expected = data.pickValue(DTYPES);
        int expectedRank = data.consumeInt(0, 5);

        decodeOrRefuse(t.build(), expected, expectedRank);
    }

    /** The same, from any bytes on the wire: what protobuf accepts as a Tensor, the codec decodes or refuses. */
    @FuzzTest(maxDuration = "30s")
    void anyWireBytesDecodeOrAreRefused(byte[] wire) {
        Tensor t;
        try {
            t = Tensor.parseFrom(wire);
        } catch (InvalidProtocolBufferException notATensor) {
            return;
        }
        for (DType expected : DTYPES) {
            for (int rank = 0; rank <= 3; rank++) {
                decodeOrRefuse(t, expected, rank);
            }
        }
    }

    @FuzzTest(maxDuration = "30s")
    void encodedValuesComeBackBitForBit(FuzzedDataProvider data) throws InvalidProtocolBufferException {
        int rows = data.consumeInt(0, 8);
        int columns = data.consumeInt(0, 8);
        float[] floats = new float[rows * columns];
        long[] longs = new long[rows * columns];
        for (int i = 0; i < floats.length; i++) {
            floats[i] = Float.intBitsToFloat(data.consumeInt()); // any bits, NaN payloads included
            longs[i] = data.consumeLong();
        }
        Tensor f = Tensor.parseFrom(TensorCodec.float32(floats, rows, columns).toByteArray());
        Tensor l = Tensor.parseFrom(TensorCodec.int64(longs, rows, columns).toByteArray());

        float[] back = TensorCodec.toFloats(f, 2, "floats");
        assertThat(back).hasSameSizeAs(floats);
        for (int i = 0; i < floats.length; i++) {
            assertThat(Float.floatToRawIntBits(back[i])).isEqualTo(Float.floatToRawIntBits(floats[i]));
        }
        assertThat(TensorCodec.toLongs(l, 2, "longs")).isEqualTo(longs);
    }

    private static void decodeOrRefuse(Tensor t, DType expected, int expectedRank) {
        ByteBuffer decoded;
        try {
            decoded = TensorCodec.verify(t, expected, expectedRank, "fuzzed tensor");
        } catch (ButterflyException refused) {
            assertThat(refused.code()).isEqualTo(ErrorCode.INVALID_MESSAGE);
            return;
        }
        assertThat(t.getDtype()).isEqualTo(expected);
        assertThat(t.getShapeCount()).isEqualTo(expectedRank);
        long elements = 1;
        for (long dim : t.getShapeList()) {
            assertThat(dim).isNotNegative();
            elements = Math.multiplyExact(elements, dim);
        }
        assertThat((long) decoded.remaining()).isEqualTo(elements * TensorCodec.elementSize(expected));
        assertThat(Sha256.digest(decoded.duplicate())).isEqualTo(t.getSha256().toByteArray());
        if (expected == DType.FLOAT32) {
            assertThat((long) TensorCodec.toFloats(t, expectedRank, "fuzzed tensor").length).isEqualTo(elements);
        } else if (expected == DType.INT64) {
            assertThat((long) TensorCodec.toLongs(t, expectedRank, "fuzzed tensor").length).isEqualTo(elements);
        }
        // A tensor that decodes under one dtype is refused under any other, never misread.
        for (DType other : DTYPES) {
            if (other != expected) {
                assertThatThrownBy(() -> TensorCodec.verify(t, other, expectedRank, "fuzzed tensor"))
                        .as("decoded as " + other + " too: " + t.getShapeList())
                        .isInstanceOf(ButterflyException.class);
            }
        }
    }
}
