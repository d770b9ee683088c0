package io.butterfly.common.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.quant.GgmlType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** GGUF files written by {@link GgufWriter} read back as written; broken ones are refused saying what is wrong. */
class GgufFileTest {

    @TempDir
    Path dir;

    private static GgufWriter.TensorBytes bytes(int n, int seed) {
        return out -> {
            byte[] b = new byte[n];
            new Random(seed).nextBytes(b);
            out.write(b);
        };
    }

    private Path sample() throws IOException {
        Path file = dir.resolve("sample.gguf");
        new GgufWriter()
                .put("general.architecture", GgufValue.string("llama"))
                .put("u8", GgufValue.of(GgufValueType.UINT8, 200L))
                .put("i16", GgufValue.of(GgufValueType.INT16, -300L))
                .put("u32", GgufValue.uint32(4_000_000_000L))
                .put("i64", GgufValue.of(GgufValueType.INT64, -5L))
                .put("f32", GgufValue.float32(0.5))
                .put("f64", GgufValue.of(GgufValueType.FLOAT64, 1e-300))
                .put("yes", GgufValue.bool(true))
                .put("words", GgufValue.array(GgufValueType.STRING, List.of("a", "ünïcode", "")))
                .put("scores", GgufValue.array(GgufValueType.FLOAT32, List.of(1.0, -2.5)))
                .tensor("q8", GgmlType.Q8_0, new long[]{64, 3}, bytes(3 * 2 * 34, 1))
                .tensor("norm", GgmlType.F32, new long[]{7}, bytes(28, 2))
                .tensor("q4k", GgmlType.Q4_K, new long[]{256, 2}, bytes(2 * 144, 3))
                .write(file);
        return file;
    }

    @Test
    void whatIsWrittenReadsBack() throws IOException {
        try (GgufFile f = GgufFile.open(sample())) {
            assertThat(f.version()).isEqualTo(3);
            assertThat(f.string("general.architecture")).contains("llama");
            assertThat(f.integer("u8")).contains(200L);
            assertThat(f.integer("i16")).contains(-300L);
            assertThat(f.integer("u32")).contains(4_000_000_000L);
            assertThat(f.integer("i64")).contains(-5L);
            assertThat(f.number("f32")).contains(0.5);
            assertThat(f.number("f64")).contains(1e-300);
            assertThat(f.bool("yes")).contains(true);
            assertThat(f.array("words").orElseThrow()).isEqualTo(List.of("a", "ünïcode", ""));
            assertThat(f.array("scores").orElseThrow()).isEqualTo(List.of(1.0, -2.5));
            assertThat(f.tensors().keySet()).containsExactly("q8", "norm", "q4k");
            GgufTensor q8 = f.tensor("q8").orElseThrow();
            assertThat(q8.type()).isEqualTo(GgmlType.Q8_0);
            assertThat(q8.shape()).containsExactly(3, 64);
            assertThat(q8.bytes()).isEqualTo(3 * 68);
            assertThat(q8.offset() % 32).isZero();
            for (GgufTensor t : f.tensors().values()) {
                ByteBuffer read = ByteBuffer.allocate((int) t.bytes());
                f.read(t, 0, read);
                ByteBuffer expected = ByteBuffer.allocate((int) t.bytes());
                int seed = t.name().equals("q8") ? 1 : t.name().equals("norm") ? 2 : 3;
                bytes((int) t.bytes(), seed).writeTo(new java.io.OutputStream() {
                    @Override
                    public void write(int b) {
                        expected.put((byte) b);
                    }

                    @Override
                    public void write(byte[] b, int off, int len) {
                        expected.put(b, off, len);
                    }
                });
                assertThat(read.flip()).as(t.name()).isEqualTo(expected.flip());
            }
        }
    }

    @Test
    void aTensorOfAnUnknownTypeIsRefusedNamingIt() throws IOException {
        Path file = sample();
        byte[] b = Files.readAllBytes(file);
        // The third tensor's type field: find "q4k" in the header, then skip its dims to the u32 type
        int at = indexOf(b, "q4k".getBytes()) + 3 + 4 + 2 * 8;
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, 99);
        Files.write(file, b);
        assertThatThrownBy(() -> GgufFile.open(file)).isInstanceOf(InvalidGgufException.class)
                .hasMessageContaining("'q4k'").hasMessageContaining("ggml type 99");
    }

    @Test
    void brokenFilesAreRefusedNotCrashedOn() throws IOException {
        byte[] good = Files.readAllBytes(sample());
        assertRefused(new byte[0], "ends inside its header");
        assertRefused("GGML0000".getBytes(), "no GGUF magic");
        byte[] v1 = good.clone();
        v1[4] = 1;
        assertRefused(v1, "version 1");
        byte[] truncated = java.util.Arrays.copyOf(good, 60);
        assertRefused(truncated, "ends inside");
        byte[] hugeCount = good.clone();
        ByteBuffer.wrap(hugeCount).order(ByteOrder.LITTLE_ENDIAN).putLong(16, Long.MAX_VALUE);
        assertRefused(hugeCount, "metadata count");
        byte[] hugeString = good.clone();
        ByteBuffer.wrap(hugeString).order(ByteOrder.LITTLE_ENDIAN).putLong(24, 1L << 40);
        assertRefused(hugeString, "longer than the rest of the file");
        // Seeded random corruption: whatever the bytes, a refusal or a file, never another exception
        Random rnd = new Random(7);
        for (int trial = 0; trial < 500; trial++) {
            byte[] b = good.clone();
            for (int k = 0; k < 1 + rnd.nextInt(4); k++) {
                b[rnd.nextInt(Math.min(b.length, 700))] = (byte) rnd.nextInt(256);
            }
            Path f = dir.resolve("corrupt.gguf");
            Files.write(f, b);
            try (GgufFile ignored = GgufFile.open(f)) {
                // parsed: the corruption kept it valid (a value or a data byte changed)
            } catch (InvalidGgufException expected) {
                assertThat(expected.getMessage()).isNotBlank();
            }
        }
    }

    private void assertRefused(byte[] bytes, String message) throws IOException {
        Path f = dir.resolve("broken.gguf");
        Files.write(f, bytes);
        assertThatThrownBy(() -> GgufFile.open(f)).isInstanceOf(InvalidGgufException.class).hasMessageContaining(message);
    }

    private static int indexOf(byte[] b, byte[] what) {
        outer:
        for (int i = 0; i + what.length <= b.length; i++) {
            for (int j = 0; j < what.length; j++) {
                if (b[i + j] != what[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
