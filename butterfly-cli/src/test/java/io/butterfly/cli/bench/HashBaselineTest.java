package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** bench-load's JDK baseline hashes the files as one stream, in order, like {@code cat FILES | sha256sum}. */
class HashBaselineTest {

    /** SHA-256("abc"), FIPS 180-2 appendix B.1. */
    private static final String SHA256_ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Test
    void hashesTheFilesAsOneStreamInTheOrderGiven() throws Exception {
        Path ab = Files.writeString(dir.resolve("ab"), "ab");
        Path c = Files.writeString(dir.resolve("c"), "c");

        assertThat(run(ab.toString(), c.toString())).isZero();
        String[] printed = out.toString(StandardCharsets.UTF_8).trim().split(" ");
        assertThat(printed).hasSize(2);
        assertThat(Long.parseLong(printed[0])).isNotNegative(); // milliseconds
        assertThat(printed[1]).isEqualTo(SHA256_ABC);

        out.reset();
        assertThat(run(c.toString(), ab.toString())).isZero();
        byte[] cab = MessageDigest.getInstance("SHA-256").digest("cab".getBytes(StandardCharsets.US_ASCII));
        assertThat(out.toString(StandardCharsets.UTF_8).trim().split(" ")[1]).isEqualTo(HexFormat.of().formatHex(cab));
    }

    @Test
    void aMissingFileIsAnErrorNamingIt() {
        assertThat(run(dir.resolve("absent.safetensors").toString())).isEqualTo(1);
        assertThat(out.size()).isZero();
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("absent.safetensors");
    }

    @Test
    void noFilesIsAUsageError() {
        assertThat(run()).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("usage");
    }

    private int run(String... files) {
        return HashBaseline.run(List.of(files), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }
}
