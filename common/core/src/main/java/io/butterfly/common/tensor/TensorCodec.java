package io.butterfly.common.tensor;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.Sha256;
import io.butterfly.proto.common.v1.DType;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * Wire form of tensors: explicit dtype, shape, little-endian bytes and their SHA-256
 * (docs/deterministic-execution.md §3, §6). Decoding checks all three and rejects a mismatch
 * with INVALID_MESSAGE, so a corrupt or truncated activation never reaches a kernel.
 */
public final class TensorCodec {

    private TensorCodec() {
    }

    public static Tensor float32(ByteBuffer littleEndian, long... shape) {
        return build(DType.FLOAT32, littleEndian, shape);
    }

    public static Tensor float32(float[] values, long... shape) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return build(DType.FLOAT32, b, shape);
    }

    public static Tensor int64(long[] values, long... shape) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(values);
        return build(DType.INT64, b, shape);
    }

    private static Tensor build(DType dtype, ByteBuffer data, long[] shape) {
        ByteBuffer d = data.duplicate();
        long expected = Math.multiplyExact(elementSize(dtype), numElements(shape));
        if (d.remaining() != expected) {
            throw new IllegalArgumentException(d.remaining() + " bytes do not match " + dtype + Arrays.toString(shape));
        }
        MessageDigest md = Sha256.newDigest();
        md.update(d.duplicate());
        Tensor.Builder t = Tensor.newBuilder().setDtype(dtype).setSha256(ByteString.copyFrom(md.digest()));
        for (long s : shape) {
            t.addShape(s);
        }
        // The buffer is not modified after this point, so wrapping it avoids a copy.
        if (d.hasArray() && d.arrayOffset() == 0 && d.position() == 0 && d.limit() == d.capacity()) {
            t.setData(UnsafeByteOperations.unsafeWrap(d.array()));
        } else {
            t.setData(ByteString.copyFrom(d));
        }
        return t.build();
    }

    /** Checks a received tensor against the expected dtype and rank, its byte length and hash. */
    public static ByteBuffer verify(Tensor t, DType expectedDtype, int expectedRank, String what) {
        if (t.getDtype() != expectedDtype) {
            throw invalid(what + " has dtype " + t.getDtype() + ", expected " + expectedDtype);
        }
        if (t.getShapeCount() != expectedRank) {
            throw invalid(what + " has rank " + t.getShapeCount() + ", expected " + expectedRank);
        }
        long expectedBytes;
        try {
            // Exact: a wrapped product could make a bogus shape match the bytes carried.
            expectedBytes = Math.multiplyExact(numElements(shapeOf(t)), (long) elementSize(expectedDtype));
        } catch (ArithmeticException | IllegalArgumentException e) {
            throw invalid(what + " has an invalid shape " + t.getShapeList());
        }
        if (t.getData().size() != expectedBytes) {
            throw invalid(what + " carries " + t.getData().size() + " bytes but shape " + t.getShapeList()
                    + " of " + expectedDtype + " needs " + expectedBytes);
        }
        ByteBuffer data = t.getData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        byte[] actual = Sha256.digest(data);
        if (!MessageDigest.isEqual(actual, t.getSha256().toByteArray())) {
            throw invalid(what + " hash mismatch: carried " + Sha256.toHex(t.getSha256().toByteArray())
                    + ", computed " + Sha256.toHex(actual));
        }
        return data;
    }

    public static float[] toFloats(Tensor t, int expectedRank, String what) {
        ByteBuffer b = verify(t, DType.FLOAT32, expectedRank, what);
        float[] out = new float[b.remaining() / 4];
        b.asFloatBuffer().get(out);
        return out;
    }

    public static long[] toLongs(Tensor t, int expectedRank, String what) {
        ByteBuffer b = verify(t, DType.INT64, expectedRank, what);
        long[] out = new long[b.remaining() / 8];
        b.asLongBuffer().get(out);
        return out;
    }

    public static int elementSize(DType dtype) {
        return switch (dtype) {
            case FLOAT32, INT32 -> 4;
            case INT64 -> 8;
            case FLOAT16, BFLOAT16 -> 2;
            default -> throw new IllegalArgumentException("unsupported dtype " + dtype);
        };
    }

    private static long[] shapeOf(Tensor t) {
        long[] shape = new long[t.getShapeCount()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = t.getShape(i);
        }
        return shape;
    }

    private static long numElements(long[] shape) {
        long n = 1;
        for (long s : shape) {
            if (s < 0) {
                throw new IllegalArgumentException("negative dimension");
            }
            n = Math.multiplyExact(n, s);
        }
        return n;
    }

    private static ButterflyException invalid(String message) {
        return new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, message);
    }
}
