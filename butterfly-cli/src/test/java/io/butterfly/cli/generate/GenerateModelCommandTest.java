package io.butterfly.cli.generate;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Each bad input to {@code model generate} is refused before anything is written, with a message naming it. */
class GenerateModelCommandTest {

    @TempDir
    Path tmp;

    private final StringWriter err = new StringWriter();

    /** Runs a small valid llama command with {@code overrides} appended (a later option wins). */
    private int run(Path out, String... overrides) {
        List<String> args = new ArrayList<>(List.of("--arch", "llama", "--layers", "2", "--hidden", "64", "--heads", "4",
                "--kv-heads", "2", "--vocab", "300", "--out", out.toString()));
        args.addAll(List.of(overrides));
        return GenerateModelCommand.run(args.toArray(String[]::new), new PrintWriter(Writer.nullWriter()),
                new PrintWriter(err, true));
    }

    private String firstErrorLine() {
        return err.toString().lines().findFirst().orElse("");
    }

    @Test
    void eachBadSizeIsNamedWithItsValue() {
        Map<List<String>, String> cases = Map.of(
                List.of("--layers", "0"), "error: --layers must be positive, got 0",
                List.of("--hidden", "-64"), "error: --hidden must be positive, got -64",
                List.of("--heads", "0"), "error: --heads must be positive, got 0",
                List.of("--kv-heads", "0"), "error: --kv-heads must be positive, got 0",
                List.of("--intermediate", "0"), "error: --intermediate must be positive, got 0",
                List.of("--vocab", "0"), "error: --vocab must be positive, got 0",
                List.of("--max-positions", "0"), "error: --max-positions must be positive, got 0",
                List.of("--layers", "abc"), "error: --layers must be an integer, got 'abc'",
                List.of("--vocab", "9999999999"), "error: --vocab is too large: 9999999999");
        assertEachRefused(cases);
    }

    /** Each case's options (on top of a valid command) exit 2 with its message, and nothing is written. */
    private void assertEachRefused(Map<List<String>, String> cases) {
        Path out = tmp.resolve("model");
        cases.forEach((override, message) -> {
            err.getBuffer().setLength(0);
            assertThat(run(out, override.toArray(String[]::new))).as(override.toString()).isEqualTo(2);
            assertThat(firstErrorLine()).as(override.toString()).isEqualTo(message);
        });
        assertThat(out).doesNotExist();
    }

    @Test
    void headsMustSplitTheWidthAndTheKvHeadsTheHeads() {
        Path out = tmp.resolve("model");
        assertThat(run(out, "--hidden", "30")).isEqualTo(2);
        assertThat(firstErrorLine()).isEqualTo("error: --hidden 30 is not divisible by --heads 4");
        err.getBuffer().setLength(0);
        assertThat(run(out, "--heads", "8", "--kv-heads", "3")).isEqualTo(2);
        assertThat(firstErrorLine()).isEqualTo("error: --heads 8 is not divisible by --kv-heads 3");
        assertThat(out).doesNotExist();
    }

    @Test
    void llamaNeedsAnEvenHeadDimensionForItsRotaryEmbeddings() {
        Path out = tmp.resolve("model");
        assertThat(run(out, "--hidden", "60", "--heads", "4", "--kv-heads", "4")).isEqualTo(2);
        assertThat(firstErrorLine()).isEqualTo("error: --hidden 60 / --heads 4 gives head dimension 15,"
                + " but llama's rotary embeddings need an even head dimension");
        assertThat(out).doesNotExist();
    }

    @Test
    void gpt2HasNoRotaryEmbeddingsSoAnOddHeadDimensionIsFine() {
        ModelConfig c = GenerateModelCommand.config(Map.of("arch", "gpt2", "layers", "1", "hidden", "60", "heads", "4",
                "vocab", "300"));
        assertThat(c.headDim()).isEqualTo(15);
    }

    @Test
    void outMustNotBeAnExistingFile() throws Exception {
        Path file = Files.writeString(tmp.resolve("afile"), "not a model");
        assertThat(run(file)).isEqualTo(2);
        assertThat(firstErrorLine()).isEqualTo("error: --out " + file + " exists and is not a directory");
        err.getBuffer().setLength(0);
        Path below = file.resolve("model");
        assertThat(run(below)).isEqualTo(2);
        assertThat(firstErrorLine()).isEqualTo("error: --out " + below + ": " + file + " exists and is not a directory");
        assertThat(Files.readString(file)).isEqualTo("not a model");
    }

    @Test
    void aShapeTakesNoSizeOptionsAndAnUnknownOneIsNamed() {
        Path out = tmp.resolve("shaped");
        String[][] bad = {{"--shape", "llama-3.2-1b", "--layers", "2", "--out", out.toString()},
            {"--shape", "llama-70b", "--out", out.toString()},
            {"--shape", "llama-3.1-8b", "--dtype", "q4", "--out", out.toString()}};
        String[] messages = {"error: --shape takes no --layers: it is a real model's shape",
            "error: unknown --shape 'llama-70b' (llama-3.2-1b, llama-3.1-8b)",
            "error: --dtype q4 writes a GGUF file: --out must end in .gguf"};
        for (int i = 0; i < bad.length; i++) {
            err.getBuffer().setLength(0);
            assertThat(GenerateModelCommand.run(bad[i], new PrintWriter(Writer.nullWriter()), new PrintWriter(err, true)))
                    .isEqualTo(2);
            assertThat(firstErrorLine()).isEqualTo(messages[i]);
        }
        assertThat(out).doesNotExist();
    }

    @Test
    void aQuantizedDtypeWritesAGgufFile() throws Exception {
        Path file = tmp.resolve("small-q8.gguf");
        assertThat(run(file, "--hidden", "128", "--dtype", "q8")).as(err.toString()).isZero();
        try (io.butterfly.common.gguf.GgufFile gguf = io.butterfly.common.gguf.GgufFile.open(file)) {
            assertThat(gguf.tensor("blk.0.attn_q.weight").orElseThrow().type())
                    .isEqualTo(io.butterfly.common.quant.GgmlType.Q8_0);
        }
    }

    @Test
    void aValidCommandWritesTheModel() throws Exception {
        Path out = tmp.resolve("model");
        assertThat(run(out)).as(err.toString()).isZero();
        assertThat(ModelConfig.read(out.resolve("config.json")).headDim()).isEqualTo(16);
        assertThat(out.resolve("model.safetensors")).exists();
    }

    @Test
    void aLlama31StyleModelCarriesItsRopeScalingIntoConfigJson() throws Exception {
        Path out = tmp.resolve("model");
        assertThat(run(out, "--rope-theta", "500000", "--rope-scaling", "llama3:8:64")).as(err.toString()).isZero();
        ModelConfig c = ModelConfig.read(out.resolve("config.json"));
        assertThat(c.ropeTheta()).isEqualTo(500000.0);
        assertThat(c.ropeScaling()).isEqualTo(RopeScaling.llama3(8.0, 1.0, 4.0, 64));
        assertThat(GenerateModelCommand.ropeScaling("linear:2.5")).isEqualTo(RopeScaling.linear(2.5));
    }

    @Test
    void aBadRopeOptionIsNamed() {
        Map<List<String>, String> cases = Map.of(
                List.of("--rope-scaling", "yarn:4"), "error: --rope-scaling must be linear:FACTOR or llama3:FACTOR:ORIGINAL_POSITIONS, was 'yarn:4'",
                List.of("--rope-scaling", "llama3:8"), "error: --rope-scaling must be linear:FACTOR or llama3:FACTOR:ORIGINAL_POSITIONS, was 'llama3:8'",
                List.of("--rope-scaling", "linear:x"), "error: --rope-scaling factor must be a number, was 'x'",
                List.of("--rope-scaling", "linear:-1"), "error: rope_scaling factor must be a positive number, was -1.0",
                List.of("--rope-scaling", "llama3:8:1.5"), "error: --rope-scaling original positions must be a positive integer, was '1.5'",
                List.of("--rope-theta", "1"), "error: --rope-theta must be a number above 1, was '1'",
                List.of("--arch", "gpt2", "--kv-heads", "4", "--rope-theta", "500"), "error: --rope-theta and --rope-scaling apply to llama only");
        assertEachRefused(cases);
    }

    @Test
    void theDemoPresetWritesTheDemoModelAndBadArgumentsPrintTheUsage() throws Exception {
        StringWriter out = new StringWriter();
        Path dir = tmp.resolve("demo");
        int code = GenerateModelCommand.run(new String[]{"--preset", "demo", "--out", dir.toString()},
                new PrintWriter(out, true), new PrintWriter(err, true));
        assertThat(code).as(err.toString()).isZero();
        assertThat(out.toString()).contains("parameters").contains(dir.getFileName().toString());
        ModelConfig c = ModelConfig.read(dir.resolve("config.json"));
        assertThat(c.numLayers()).isEqualTo(6);
        assertThat(c.vocabSize()).isEqualTo(4096);

        for (String[] bad : List.of(new String[]{"--arch", "llama"}, new String[]{"--bogus", "1", "--out", "x"},
                new String[]{"--preset", "demo"}, new String[]{"--preset", "demo", "--dtype", "f8", "--out", "x"},
                new String[]{"--arch", "gpt2", "--layers", "2", "--hidden", "30", "--heads", "4", "--vocab", "300", "--out", "x"},
                new String[]{"--preset", "demo", "--vocab", "100", "--out", "x"})) {
            err.getBuffer().setLength(0);
            assertThat(GenerateModelCommand.run(bad, new PrintWriter(out, true), new PrintWriter(err, true)))
                    .as(String.join(" ", bad)).isEqualTo(2);
            assertThat(err.toString()).as(String.join(" ", bad)).contains("error:").contains("usage:");
        }
        assertThat(tmp.resolve("x")).doesNotExist();
    }
}
