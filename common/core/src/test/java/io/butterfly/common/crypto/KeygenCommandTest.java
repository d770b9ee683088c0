package io.butterfly.common.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KeygenCommandTest {

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int keygen(String... args) {
        return KeygenCommand.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    @Test
    void printsThePublicKeyOfTheIdentityItWrote(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("publisher");

        assertThat(keygen("--out", dir.toString())).isZero();

        String printed = out.toString(StandardCharsets.UTF_8).strip();
        assertThat(printed).matches("[0-9a-f]{64}");
        assertThat(Files.readString(dir.resolve("identity.pub")).strip()).isEqualTo(printed);
        // The registry loading that directory signs with exactly this key.
        assertThat(NodeIdentity.loadOrCreate(dir).publicKeyHex()).isEqualTo(printed);
    }

    @Test
    void neverOverwritesAnExistingKey(@TempDir Path dir) throws Exception {
        String existing = NodeIdentity.loadOrCreate(dir).publicKeyHex();
        byte[] key = Files.readAllBytes(dir.resolve("identity.key"));

        assertThat(keygen("--out", dir.toString())).isEqualTo(2);

        assertThat(err.toString(StandardCharsets.UTF_8)).contains("exists already");
        assertThat(Files.readAllBytes(dir.resolve("identity.key"))).isEqualTo(key);
        assertThat(NodeIdentity.loadOrCreate(dir).publicKeyHex()).isEqualTo(existing);
    }

    @Test
    void badArgumentsPrintTheUsage() {
        assertThat(keygen()).isEqualTo(2);
        assertThat(keygen("--out")).isEqualTo(2);
        assertThat(keygen("--dir", "x")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("usage: KeygenCommand --out DIR");
        assertThat(out.size()).isZero();
    }
}
