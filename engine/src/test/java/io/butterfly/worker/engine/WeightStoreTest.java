package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Loads give the stored values in engine-owned memory: transposed ones whatever the matrix's shape, stacked ones one
 * below the other, plain ones read straight into the tensor, widened from F16 and BF16.
 */
class WeightStoreTest {

    @TempDir
    Path dir;

    @Test
    void transposedMatricesAndVectorsSurviveTheNextLoad() throws Exception {
        Path file = dir.resolve("w.safetensors");
        SafetensorsWriter.write(file, List.of(
                SafetensorsWriter.Entry.float32("row", new long[]{1, 4}, new float[]{1, 2, 3, 4}),
                SafetensorsWriter.Entry.float32("col", new long[]{4, 1}, new float[]{5, 6, 7, 8}),
                SafetensorsWriter.Entry.float32("m", new long[]{2, 3}, new float[]{0, 1, 2, 3, 4, 5}),
                SafetensorsWriter.Entry.float32("other", new long[]{6}, new float[]{-1, -1, -1, -1, -1, -1})), Map.of());
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
             WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager)) {
            NDArray row = store.loadTransposed("row", 1, 4);
            NDArray col = store.loadTransposed("col", 4, 1);
            NDArray m = store.loadTransposed("m", 2, 3);
            // Staging the next tensor reuses the buffer the transposed ones were read from.
            store.load("other", 6);
            assertThat(row.getShape().getShape()).containsExactly(4, 1);
            assertThat(row.toFloatArray()).containsExactly(1, 2, 3, 4);
            assertThat(col.getShape().getShape()).containsExactly(1, 4);
            assertThat(col.toFloatArray()).containsExactly(5, 6, 7, 8);
            assertThat(m.getShape().getShape()).containsExactly(3, 2);
            assertThat(m.toFloatArray()).containsExactly(0, 3, 1, 4, 2, 5);
        }
    }

    @Test
    void stackedLoadPutsTheMatricesOneBelowTheOtherInTheGivenOrder() throws Exception {
        Path file = dir.resolve("qkv.safetensors");
        SafetensorsWriter.write(file, List.of(
                SafetensorsWriter.Entry.float32("q", new long[]{2, 3}, new float[]{0, 1, 2, 3, 4, 5}),
                SafetensorsWriter.Entry.float32("k", new long[]{1, 3}, new float[]{6, 7, 8}),
                halves("v", "BF16", new long[]{1, 3}, 0x3F80, 0xC000, 0x3F00)), Map.of());
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
             WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager)) {
            NDArray fused = store.loadStacked(new String[]{"q", "k", "v"}, new long[]{2, 1, 1}, 3);
            NDArray vq = store.loadStacked(new String[]{"v", "q"}, new long[]{1, 2}, 3);
            assertThat(fused.getShape().getShape()).containsExactly(4, 3);
            assertThat(fused.toFloatArray()).containsExactly(0, 1, 2, 3, 4, 5, 6, 7, 8, 1, -2, 0.5f);
            assertThat(vq.toFloatArray()).containsExactly(1, -2, 0.5f, 0, 1, 2, 3, 4, 5);
            assertThat(store.bytesLoaded()).isEqualTo(4L * (12 + 9));
            assertThatThrownBy(() -> store.loadStacked(new String[]{"q", "k"}, new long[]{2, 2}, 3))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'k' has shape [1, 3]");
        }
    }

    @Test
    void aMatrixTransposedFromTheFilesPagesIsTheEnginesOwnWritableCopy() throws Exception {
        Path file = dir.resolve("head.safetensors");
        float[] stored = new float[64 * 48];
        for (int i = 0; i < stored.length; i++) {
            stored[i] = i * 0.5f - 7;
        }
        SafetensorsWriter.write(file, List.of(
                SafetensorsWriter.Entry.float32("head", new long[]{64, 48}, stored),
                // The same matrix's first rows as half floats: widened, so staged rather than read in place.
                halves("half", "F16", new long[]{2, 3}, 0x3800, 0xBD00, 0x4200, 0x1419, 0x8000, 0x7BFF)), Map.of());
        byte[] before = java.nio.file.Files.readAllBytes(file);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray head;
            NDArray half;
            try (WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager)) {
                head = store.loadTransposed("head", 64, 48);
                half = store.loadTransposed("half", 2, 3);
                assertThat(store.bytesLoaded()).isEqualTo(4L * (64 * 48 + 6));
            }
            System.gc(); // the file is closed and its mapping may be gone: the matrix must not depend on either
            assertThat(head.getShape().getShape()).containsExactly(48, 64);
            float[] t = head.toFloatArray();
            for (int r = 0; r < 64; r++) {
                for (int c = 0; c < 48; c++) {
                    assertThat(t[c * 64 + r]).isEqualTo(stored[r * 48 + c]);
                }
            }
            head.muli(2); // its own memory: the file's pages are mapped read-only and must stay as they were
            assertThat(head.getFloat(1, 0)).isEqualTo(2 * stored[1]);
            assertThat(half.toFloatArray()).containsExactly(0.5f, 0.0010004044f, -1.25f, -0f, 3f, 65504f);
        }
        assertThat(java.nio.file.Files.readAllBytes(file)).isEqualTo(before);
    }

    @Test
    void plainLoadsHoldTheStoredValuesAndEachHasItsOwnMemory() throws Exception {
        Path file = dir.resolve("plain.safetensors");
        float[] values = {0.5f, -1.25f, 3f, 1e-3f, -0f, 65504f};
        SafetensorsWriter.write(file, List.of(
                SafetensorsWriter.Entry.float32("f32", new long[]{2, 3}, values),
                // The same values as IEEE half floats (1e-3 rounds to 0.0010004044), and others as bfloat16.
                halves("f16", "F16", new long[]{3, 2}, 0x3800, 0xBD00, 0x4200, 0x1419, 0x8000, 0x7BFF),
                halves("bf16", "BF16", new long[]{6}, 0x3F80, 0xC000, 0x3F00, 0x4380, 0xBE00, 0x4040)),
                Map.of());
        // Nothing mapped (a limit of 0 bytes): every load is the engine's own memory.
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
             WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager, 0)) {
            NDArray f32 = store.load("f32", 2, 3);
            NDArray f16 = store.load("f16", 3, 2);
            NDArray bf16 = store.load("bf16", 6);
            NDArray again = store.load("f32", 2, 3);
            again.muli(2); // a second load of the same tensor is its own copy
            assertThat(f32.getShape().getShape()).containsExactly(2, 3);
            assertThat(f32.toFloatArray()).containsExactly(values);
            assertThat(f16.getShape().getShape()).containsExactly(3, 2);
            assertThat(f16.toFloatArray()).containsExactly(0.5f, -1.25f, 3f, 0.0010004044f, -0f, 65504f);
            assertThat(bf16.toFloatArray()).containsExactly(1f, -2f, 0.5f, 256f, -0.125f, 3f);
            assertThat(store.bytesLoaded()).isEqualTo(4L * (6 + 6 + 6 + 6));
            assertThatThrownBy(() -> store.load("f32", 3, 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'f32' has shape [2, 3]");
        }
    }

    @Test
    void float32TensorsAndStoredBytesAreTheFilesOwnPagesAndOutliveTheFile() throws Exception {
        Path file = dir.resolve("mapped.safetensors");
        float[] q = {1, 2, 3, 4, 5, 6};
        float[] k = {7, 8, 9};
        byte[] block = new byte[34];
        for (int i = 0; i < block.length; i++) {
            block[i] = (byte) (3 * i + 1);
        }
        SafetensorsWriter.write(file, List.of(
                SafetensorsWriter.Entry.float32("q", new long[]{2, 3}, q),
                SafetensorsWriter.Entry.float32("k", new long[]{1, 3}, k),
                // one Q8_0 block (34 bytes: 32 values in a row)
                new SafetensorsWriter.Entry("blocks", "U8", new long[]{1, 34}, ByteBuffer.wrap(block)),
                SafetensorsWriter.Entry.float32("norm", new long[]{3}, new float[]{0.5f, 0.25f, 2})),
                Map.of(io.butterfly.common.quant.QuantizedTensors.typeKey("blocks"), "Q8_0"));
        byte[] before = java.nio.file.Files.readAllBytes(file);
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray fused;
            NDArray blocks;
            NDArray norm;
            try (WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager)) {
                fused = store.loadStacked(new String[]{"q", "k"}, new long[]{2, 1}, 3);
                blocks = store.loadBytes("blocks", 1, 32);
                // after 34 bytes of blocks the norm is not 4-byte aligned: copied, not mapped
                norm = store.load("norm", 3);
                assertThat(store.bytesLoaded()).isEqualTo(4L * 9 + 34 + 4L * 3);
            }
            System.gc(); // the file is closed: the arrays hold their mappings
            assertThat(fused.toFloatArray()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9);
            assertThat(blocks.toByteArray()).containsExactly(block);
            assertThat(norm.toFloatArray()).containsExactly(0.5f, 0.25f, 2);
        }
        assertThat(java.nio.file.Files.readAllBytes(file)).isEqualTo(before);
    }

    /**
     * A projection the engine has copied gives its file pages back: a 64 MiB float32 matrix read through its mapping is
     * in the process's resident memory (RssFile) until released, then out of it, and the mapping still reads the same
     * values (the page cache kept them).
     */
    @Test
    void releasedPagesLeaveTheResidentMemoryAndStillReadTheStoredValues() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(io.butterfly.worker.engine.cpu.NativeKernels.available(),
                "the native kernels (gcc, Linux x86-64) release the pages");
        int rows = 4096;
        int cols = 4096;
        float[] values = new float[rows * cols];
        java.util.SplittableRandom random = new java.util.SplittableRandom(53);
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) random.nextGaussian();
        }
        Path file = dir.resolve("projection.safetensors");
        SafetensorsWriter.write(file, List.of(SafetensorsWriter.Entry.float32("w", new long[]{rows, cols}, values)), Map.of());
        long mib = 1L << 20;
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
             WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager)) {
            NDArray w = store.load("w", rows, cols);
            long before = rssFile();
            float[] read = w.toFloatArray(); // touches every page of the mapping
            long touched = rssFile();
            store.releasePages(w);
            long released = rssFile();
            assertThat(touched - before).as("RssFile grew by the mapped pages read").isGreaterThan(56 * mib);
            assertThat(touched - released).as("and shrank by them once released").isGreaterThan(56 * mib);
            assertThat(java.util.Arrays.equals(read, values)).as("the values read before the release").isTrue();
            assertThat(java.util.Arrays.equals(w.toFloatArray(), values)).as("and after it").isTrue();
            store.releasePages(w); // a second time, or an array that is no view: nothing
            w.close();
        }
    }

    /** The file pages mapped into this process (RssFile of /proc/self/status), in bytes. */
    private static long rssFile() throws java.io.IOException {
        for (String line : java.nio.file.Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("RssFile:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no RssFile in /proc/self/status");
    }

    /**
     * A tensor stored past the first 2 GiB of its file (a sparse file: the hole before it takes no disk) loads, mapped
     * and copied: offsets are longs from the header to the engine.
     */
    @Test
    void aTensorBeyondTwoGigabytesOfTheFileLoadsMappedAndCopied() throws Exception {
        Path file = dir.resolve("large.safetensors");
        long hole = (1L << 31) + 64;
        String header = "{\"hole\":{\"dtype\":\"U8\",\"shape\":[" + hole + "],\"data_offsets\":[0," + hole + "]},"
                + "\"tail\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[" + hole + "," + (hole + 16) + "]}}";
        byte[] json = (header + " ".repeat((8 - header.length() % 8) % 8)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try (java.nio.channels.FileChannel out = java.nio.channels.FileChannel.open(file,
                java.nio.file.StandardOpenOption.CREATE_NEW, java.nio.file.StandardOpenOption.WRITE)) {
            out.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, json.length), 0);
            out.write(ByteBuffer.wrap(json), 8);
            ByteBuffer tail = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN);
            tail.asFloatBuffer().put(new float[]{1.5f, -2, 3, 0.25f});
            out.write(tail, 8 + json.length + hole);
        }
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            for (long mappable : new long[]{Integer.MAX_VALUE, 0}) {
                try (WeightStore store = WeightStore.open(List.of(SafetensorsFile.open(file)), manager, mappable)) {
                    assertThat(store.load("tail", 2, 2).toFloatArray()).as("mappable %d", mappable)
                            .containsExactly(1.5f, -2, 3, 0.25f);
                    assertThat(store.loadBytes("tail", 2, 2).toByteArray()).hasSize(16);
                }
            }
        }
    }

    private static SafetensorsWriter.Entry halves(String name, String dtype, long[] shape, int... bits) {
        ByteBuffer b = ByteBuffer.allocate(bits.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : bits) {
            b.putShort((short) v);
        }
        return new SafetensorsWriter.Entry(name, dtype, shape, b.flip());
    }
}
