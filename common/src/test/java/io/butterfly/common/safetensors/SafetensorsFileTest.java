package io.butterfly.common.safetensors;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Hostile headers are refused as {@link InvalidSafetensorsException}, never read one way or another. */
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

    private Path file(String header, int dataBytes) throws Exception {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        Path p = Files.createTempFile(dir, "t", ".safetensors");
        Files.write(p, b.array());
        return p;
    }
}
