package io.butterfly.common.safetensors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile headers are refused as {@link InvalidSafetensorsException}, never read one way or another; a tensor's bytes
 * read or mapped are exactly its stored range.
 */
class SafetensorsFileTest {

    @TempDir
    Path dir;

    @Test
    void aNameGivenTwiceIsRefusedNotResolvedToItsLastEntry() throws Exception {
        // Which entry counts would depend on the reader: the registry and DJL could see different bytes.
        Path twice = file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8);
        assertThatThrownBy(() -> SafetensorsFile.open(twice))
                .isInstanceOf(InvalidSafetensorsException.class).hasMessageContaining("Duplicate").hasMessageContaining("\"a\"");

        Path fieldTwice = file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"data_offsets\":[4,8]}}", 8);
        assertThatThrownBy(() -> SafetensorsFile.open(fieldTwice))
                .isInstanceOf(InvalidSafetensorsException.class).hasMessageContaining("Duplicate").hasMessageContaining("data_offsets");
    }

    /** Found by fuzzing: Jackson's own exception escaped, or a name opened that could not be written back. */
    @Test
    void metadataOtherThanStringsAndHalfCharactersAreRefused() throws Exception {
        String tensor = "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";
        for (String header : List.of("{\"__metadata__\":{\"format\":{}}," + tensor + "}",
                "{\"__metadata__\":[\"pt\"]," + tensor + "}",
                "{\"\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}")) {
            Path p = file(header, 4);
            assertThatThrownBy(() -> SafetensorsFile.open(p)).as(header).isInstanceOf(InvalidSafetensorsException.class);
        }
        byte[] notUtf8 = {'{', '"', (byte) 0xff, '"', ':', '1', '}'};
        Path p = dir.resolve("latin1.safetensors");
        Files.write(p, ByteBuffer.allocate(8 + notUtf8.length).order(ByteOrder.LITTLE_ENDIAN).putLong(notUtf8.length)
                .put(notUtf8).array());
        assertThatThrownBy(() -> SafetensorsFile.open(p)).isInstanceOf(InvalidSafetensorsException.class)
                .hasMessageContaining("not UTF-8");
    }

    @Test
    void aMappedTensorIsItsStoredRangeReadOnlyAndOutlivesTheFile() throws Exception {
        Path p = dir.resolve("m.safetensors");
        SafetensorsWriter.write(p, List.of(
                SafetensorsWriter.Entry.float32("a", new long[]{3}, new float[]{1, 2, 3}),
                SafetensorsWriter.Entry.float32("b", new long[]{2, 2}, new float[]{4, 5, 6, 7})), Map.of());
        ByteBuffer mapped;
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            mapped = f.mappedBytes("b");
            assertThat(mapped).isEqualTo(f.rawBytes("b"));
            assertThat(f.mappedBytes("a")).isEqualTo(f.rawBytes("a"));
            ByteBuffer both = ByteBuffer.allocate(28).put(f.rawBytes("a")).put(f.rawBytes("b")).flip();
            assertThat(f.mappedBytes("a", "b")).isEqualTo(both);
            assertThat(f.backToBack("b", "a")).isFalse();
            assertThat(f.backToBack("a", "missing")).isFalse();
            assertThatThrownBy(() -> f.mappedBytes("b", "a")).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("b, a are not stored back to back");
        }
        assertThat(mapped.isDirect()).isTrue();
        assertThat(mapped.order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
        assertThat(mapped.remaining()).isEqualTo(16);
        assertThat(mapped.getFloat(0)).isEqualTo(4f);
        assertThat(mapped.getFloat(12)).isEqualTo(7f);
        assertThatThrownBy(() -> mapped.putFloat(0, 9f)).isInstanceOf(ReadOnlyBufferException.class);
    }

    private Path file(String header, int dataBytes) throws Exception {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        Path p = Files.createTempFile(dir, "t", ".safetensors");
        Files.write(p, b.array());
        return p;
    }
}
