package io.butterfly.common.safetensors;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Timeout;

/**
 * Any bytes as a safetensors file (docs/testing.md, fuzzing): the file opens, or is refused with
 * {@link InvalidSafetensorsException} and nothing else. An opened file keeps the parser's promises (every tensor's
 * bytes inside the data section, as long as its dtype and shape say, no two overlapping, each one readable) and
 * survives a round trip through {@link SafetensorsWriter} unchanged. Kept inputs: {@code SafetensorsFileFuzzTestInputs/}.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class SafetensorsFileFuzzTest {

    @TempDir
    static Path dir;

    @FuzzTest(maxDuration = "30s")
    void anyFileOpensAsValidatedOrIsRefused(byte[] bytes) throws IOException {
        Path file = dir.resolve("fuzzed.safetensors");
        Files.write(file, bytes);
        SafetensorsFile opened;
        try {
            opened = SafetensorsFile.open(file);
        } catch (InvalidSafetensorsException refused) {
            return;
        }
        try (SafetensorsFile f = opened) {
            long dataStart = 8 + ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
            long dataSize = bytes.length - dataStart;
            List<TensorInfo> byBegin = new ArrayList<>(f.tensors().values());
            byBegin.sort(Comparator.comparingLong(TensorInfo::begin));
            long previousEnd = 0;
            for (TensorInfo t : byBegin) {
                assertThat(t.begin()).isGreaterThanOrEqualTo(previousEnd);
                assertThat(t.end()).isBetween(t.begin(), dataSize);
                assertThat(t.byteLength()).isEqualTo(t.numElements() * TensorInfo.elementSize(t.dtype()));
                ByteBuffer raw = f.rawBytes(t.name());
                assertThat(raw.remaining()).isEqualTo(t.byteLength());
                assertThat(raw).isEqualTo(ByteBuffer.wrap(bytes, (int) (dataStart + t.begin()), (int) t.byteLength()));
                if (t.dtype().equals("F32") || t.dtype().equals("F16") || t.dtype().equals("BF16")) {
                    assertThat((long) f.readFloats(t.name()).length).isEqualTo(t.numElements());
                }
                previousEnd = t.end();
            }
            assertRoundTrips(f);
        }
    }

    /** What was read, written back by the writer (packed, in header order), reads back the same. */
    private static void assertRoundTrips(SafetensorsFile f) throws IOException {
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        for (TensorInfo t : f.tensors().values()) {
            entries.add(new SafetensorsWriter.Entry(t.name(), t.dtype(), t.shape(), f.rawBytes(t.name())));
        }
        Path copy = dir.resolve("copy.safetensors");
        SafetensorsWriter.write(copy, entries, f.metadata());
        try (SafetensorsFile back = SafetensorsFile.open(copy)) {
            assertThat(back.metadata()).isEqualTo(f.metadata());
            assertThat(back.tensors().keySet()).containsExactlyElementsOf(f.tensors().keySet());
            for (Map.Entry<String, TensorInfo> e : f.tensors().entrySet()) {
                TensorInfo t = back.info(e.getKey());
                assertThat(t.dtype()).isEqualTo(e.getValue().dtype());
                assertThat(t.shape()).isEqualTo(e.getValue().shape());
                assertThat(back.rawBytes(e.getKey())).isEqualTo(f.rawBytes(e.getKey()));
            }
        }
    }
}
