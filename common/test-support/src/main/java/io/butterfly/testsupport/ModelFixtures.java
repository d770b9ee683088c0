package io.butterfly.testsupport;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The models tests load, written by the model generator ({@link ModelGenerator}): the shapes the tests are written
 * against, and the directories themselves. Seeded: the same arguments give the same bytes.
 *
 * <p>Two sizes. The engine's models are weights only ({@link #weightsOnly()}): their vocabularies (120, 128) are
 * smaller than a byte-level tokenizer's 256 symbols, and the engine reads no tokenizer. The registry's are
 * complete model directories with a tokenizer, as the import requires.
 */
public final class ModelFixtures {

    private ModelFixtures() {
    }

    /** Llama with grouped-query attention: 4 layers, 4 heads sharing 2 kv heads, untied head. */
    public static ModelConfig llamaGqa() {
        return new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 96, 128, 160, 1e-5, 10000.0, false, 1, 2);
    }

    /**
     * {@link #llamaGqa()} with scaled rotary frequencies. With head dim 16 and theta 10^4 the wavelengths run from 6
     * to 2*10^4 positions; llama3 scaling over an original context of 64 (bands at 16 and 64) keeps one
     * frequency, interpolates two and divides five.
     */
    public static ModelConfig llamaGqa(RopeScaling scaling) {
        ModelConfig c = llamaGqa();
        return new ModelConfig(c.architecture(), c.numLayers(), c.hiddenSize(), c.numHeads(), c.numKvHeads(),
                c.intermediateSize(), c.vocabSize(), c.maxPositions(), c.normEps(), c.ropeTheta(), c.tieWordEmbeddings(),
                c.bosTokenId(), c.eosTokenId(), scaling, c.moreEosTokenIds());
    }

    /** Qwen2-style Llama (written with q/k/v biases): 4 layers, one kv head per two query heads, tied embeddings. */
    public static ModelConfig llamaTied() {
        return new ModelConfig(Architecture.LLAMA, 4, 48, 4, 2, 80, 120, 64, 1e-6, 500.0, true, 1, 2);
    }

    /** Mixtral: {@link #llamaGqa()}'s attention, 8 experts of width 96 in every layer, 2 per token. */
    public static ModelConfig mixtral() {
        return llamaGqa().withExperts(
                new MixtureOfExperts(MixtureOfExperts.Kind.MIXTRAL, 8, 2, 96, 0, true, 1, List.of()));
    }

    /**
     * Qwen2-MoE (written with q/k/v biases): 8 experts of width 32, 2 per token, weights not renormalized, a shared
     * expert of width 64; layer 1 dense (mlp_only_layers).
     */
    public static ModelConfig qwen2Moe() {
        return llamaGqa().withExperts(
                new MixtureOfExperts(MixtureOfExperts.Kind.QWEN2_MOE, 8, 2, 32, 64, false, 1, List.of(1)));
    }

    /** Qwen3: {@link #llamaGqa()} with per-head q/k RMSNorm. */
    public static ModelConfig qwen3() {
        return llamaGqa().withQkNormAndExperts(true, null);
    }

    /** Qwen3-MoE: q/k norms, 8 experts of width 32, 2 per token, renormalized; every second layer sparse. */
    public static ModelConfig qwen3Moe() {
        return llamaGqa().withQkNormAndExperts(true,
                new MixtureOfExperts(MixtureOfExperts.Kind.QWEN3_MOE, 8, 2, 32, 0, true, 2, List.of()));
    }

    /** GPT-2: 4 layers, LM head tied to the token embedding. */
    public static ModelConfig gpt2() {
        return new ModelConfig(Architecture.GPT2, 4, 64, 4, 4, 256, 128, 64, 1e-5, 0, true, -1, -1);
    }

    /** {@link #gpt2()} with its own {@code lm_head.weight}. */
    public static ModelConfig gpt2UntiedHead() {
        ModelConfig c = gpt2();
        return new ModelConfig(c.architecture(), c.numLayers(), c.hiddenSize(), c.numHeads(), c.numKvHeads(),
                c.intermediateSize(), c.vocabSize(), c.maxPositions(), c.normEps(), c.ropeTheta(), false,
                c.bosTokenId(), c.eosTokenId());
    }

    /** A registry-sized Llama: 3 layers, hidden 16, 4 heads sharing 2 kv heads, a 300-token vocabulary. */
    public static ModelConfig tinyLlama(boolean tiedHead) {
        return new ModelConfig(Architecture.LLAMA, 3, 16, 4, 2, 32, 300, 32, 1e-5, 10000, tiedHead, 1, 2);
    }

    /** A registry-sized GPT-2: 2 layers, hidden 16, tied head, a 300-token vocabulary. */
    public static ModelConfig tinyGpt2() {
        return new ModelConfig(Architecture.GPT2, 2, 16, 4, 4, 64, 300, 24, 1e-5, 0, true, 0, 0);
    }

    /** Float32 config.json and weights, no tokenizer: what the engine reads. */
    public static ModelGenerator.Options weightsOnly() {
        return ModelGenerator.Options.defaults().withoutTokenizer();
    }

    /** Writes the model into {@code dir} (created); returns {@code dir}. */
    public static Path write(ModelConfig config, ModelGenerator.Options options, long seed, Path dir) {
        try {
            ModelGenerator.generate(config, seed, dir, options);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir;
    }

    /** A complete float32 model directory (config, tokenizer, model.safetensors); returns {@code dir}. */
    public static Path write(ModelConfig config, long seed, Path dir) {
        return write(config, ModelGenerator.Options.defaults(), seed, dir);
    }

    /** Every tensor of the safetensors files in {@code dir} (by file name, then in file order), copied to the heap. */
    public static List<SafetensorsWriter.Entry> tensors(Path dir) {
        List<SafetensorsWriter.Entry> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : files.filter(f -> f.getFileName().toString().endsWith(".safetensors")).sorted().toList()) {
                try (SafetensorsFile f = SafetensorsFile.open(p)) {
                    for (TensorInfo t : f.tensors().values()) {
                        ByteBuffer raw = f.rawBytes(t.name());
                        ByteBuffer copy = ByteBuffer.allocate(raw.remaining()).put(raw.duplicate()).flip();
                        out.add(new SafetensorsWriter.Entry(t.name(), t.dtype(), t.shape(), copy.order(ByteOrder.LITTLE_ENDIAN)));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}
