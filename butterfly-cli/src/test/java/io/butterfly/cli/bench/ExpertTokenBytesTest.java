package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.common.model.ModelConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The bytes a decode token of a generated Mixtral reads, against the count from its shapes. */
class ExpertTokenBytesTest {

    @Test
    void aTokenReadsTheDenseWeightsOneEmbeddingRowAndItsChosenExperts(@TempDir Path dir) throws Exception {
        StringWriter log = new StringWriter();
        int rc = GenerateModelCommand.run(new String[]{"--arch", "mixtral", "--layers", "3", "--hidden", "64",
                "--heads", "4", "--kv-heads", "2", "--intermediate", "96", "--vocab", "300", "--experts", "6",
                "--experts-per-token", "2", "--out", dir.toString()}, new PrintWriter(log), new PrintWriter(log));
        assertThat(rc).as(log.toString()).isZero();
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        ExpertTokenBytes bytes = ExpertTokenBytes.of(dir, config);

        long h = 64;
        long kv = 2 * 16;
        long layers = 3;
        long perLayer = 2 * h + h * h + 2 * kv * h + h * h + 6 * h; // norms, q, k, v, o, router
        long dense = h + layers * perLayer + h + 300 * h; // an embedding row, the layers, final norm, LM head
        assertThat(bytes.dense()).isEqualTo(4 * dense);
        assertThat(bytes.experts()).isEqualTo(4 * layers * 6 * 3 * 96 * h);
        assertThat(bytes.chosen()).isEqualTo(4 * layers * 2 * 3 * 96 * h);
        assertThat(bytes.perToken()).isEqualTo(bytes.dense() + bytes.chosen());
        // three groups of two experts: each reads a third of the chosen experts on average, group 0 also the rest
        assertThat(bytes.groupShare(2, 6, true)).isEqualTo(bytes.dense() + bytes.chosen() / 3.0);
        assertThat(bytes.groupShare(2, 6, false)).isEqualTo(bytes.chosen() / 3.0);
    }
}
