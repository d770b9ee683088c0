package io.butterfly.common.safetensors;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsWriterTest {

    @TempDir
    Path dir;

    @Test
    void headerIsCanonicalSoTheFileHashIsReproducible() throws Exception {
        Map<String, String> metadata = new HashMap<>();
        for (String k : List.of("zeta", "format", "alpha", "mid")) {
            metadata.put(k, k.toUpperCase());
        }
        List<SafetensorsWriter.Entry> entries = List.of(
                SafetensorsWriter.Entry.float32("b.weight", new long[]{2}, new float[]{1f, 2f}),
                SafetensorsWriter.Entry.float32("a.weight", new long[]{1, 1}, new float[]{3f}));
        Path file = dir.resolve("x.safetensors");
        SafetensorsWriter.write(file, entries, metadata);

        byte[] bytes = Files.readAllBytes(file);
        long headerLength = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        String header = new String(bytes, 8, (int) headerLength, StandardCharsets.UTF_8).stripTrailing();
        assertThat(header).isEqualTo("{\"__metadata__\":{\"alpha\":\"ALPHA\",\"format\":\"FORMAT\",\"mid\":\"MID\",\"zeta\":\"ZETA\"},"
                + "\"b.weight\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"a.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[8,12]}}");
        assertThat((8 + headerLength) % 8).isZero();

        try (SafetensorsFile read = SafetensorsFile.open(file)) {
            assertThat(read.tensors().keySet()).containsExactlyInAnyOrder("a.weight", "b.weight");
        }
    }
}
