package io.butterfly.cli.generate;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.command.Commands;
import io.butterfly.common.crypto.NodeIdentity;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class KeygenCommandTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int keygen(String... args) {
        CommandLine line = Commands.line(new KeygenCommand());
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        return line.execute(args);
    }

    @Test
    void printsThePublicKeyOfTheIdentityItWrote(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("publisher");

        assertThat(keygen("--out", dir.toString())).isZero();

        String printed = out.toString().strip();
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

        assertThat(err.toString()).contains("exists already");
        assertThat(Files.readAllBytes(dir.resolve("identity.key"))).isEqualTo(key);
        assertThat(NodeIdentity.loadOrCreate(dir).publicKeyHex()).isEqualTo(existing);
    }

    @Test
    void badArgumentsPrintTheUsage() {
        assertThat(keygen()).isEqualTo(2);
        assertThat(err.toString()).startsWith("error: --out DIR is required");
        assertThat(keygen("--out")).isEqualTo(2);
        assertThat(keygen("--dir", "x")).isEqualTo(2);
        assertThat(err.toString()).contains("error: --out needs a value").contains("error: unknown option --dir for keygen")
                .contains("usage: keygen");
        assertThat(out.toString()).isEmpty();
    }
}
