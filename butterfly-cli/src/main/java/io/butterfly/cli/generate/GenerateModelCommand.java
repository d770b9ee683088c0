package io.butterfly.cli.generate;

import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.ShowsUsageOnError;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.generate.GgufModelGenerator;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.model.generate.ModelShapes;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.model.generate.TokenizerGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code model generate}: writes a seeded random Hugging Face model directory (config.json, tokenizer.json,
 * model.safetensors) with the model generator. Sizes are read as given (a later option overrides an earlier one and
 * a preset's) and checked as the workers would, each refusal naming the option, before anything is written.
 */
@Command(name = "generate", description = "write a seeded random Hugging Face model directory (config.json,"
        + " tokenizer.json, tokenizer_config.json with a ChatML chat template, generation_config.json,"
        + " model.safetensors)")
public final class GenerateModelCommand implements Callable<Integer>, ShowsUsageOnError {

    @Spec
    CommandSpec spec;

    @Option(names = "--preset", paramLabel = "NAME", description = {"demo (Llama, 6 layers, hidden 256, 8/4 heads, vocab"
            + " 4096) or bench-100m (Llama, 12 layers, hidden 768, 12 heads, vocab 32000, fp32);",
            "explicit options override the preset"})
    String preset;

    @Option(names = "--shape", paramLabel = "NAME", description = {"a real model's shape: llama-3.2-1b (16 layers, hidden"
            + " 2048, 32/8 heads, vocab 128256, tied) or llama-3.1-8b (32 layers, hidden 4096, 32/8 heads, vocab 128256);",
            "written streaming; takes only --dtype, --seed and --out"})
    String shape;

    @Option(names = "--arch", paramLabel = "ARCH", description = {"llama, gpt2, qwen3 (q/k norms), or a mixture of"
            + " experts: mixtral, qwen2-moe (with a shared expert), qwen3-moe (required without a preset)"})
    String arch;

    @Option(names = "--experts", paramLabel = "N", description = "experts per layer (mixtures of experts; default 8)")
    String experts;

    @Option(names = "--experts-per-token", paramLabel = "K", description = "experts each token visits (default 2)")
    String expertsPerToken;

    @Option(names = "--expert-intermediate", paramLabel = "N", description = {"an expert's MLP width (default: the"
            + " intermediate size for mixtral, half of it for qwen2-moe and qwen3-moe, whose shared expert (qwen2-moe)"
            + " and dense layers have the intermediate size)"})
    String expertIntermediate;

    @Option(names = "--layers", paramLabel = "N", description = "transformer blocks (required without a preset)")
    String layers;

    @Option(names = "--hidden", paramLabel = "N", description = "model width (required without a preset)")
    String hidden;

    @Option(names = "--heads", paramLabel = "N", description = "attention heads (required without a preset)")
    String heads;

    @Option(names = "--kv-heads", paramLabel = "N", description = "key/value heads (default: heads; must equal heads"
            + " for gpt2)")
    String kvHeads;

    @Option(names = "--intermediate", paramLabel = "N", description = "MLP width (default: 4*hidden for gpt2, ~8/3*hidden"
            + " rounded to 8 for llama)")
    String intermediate;

    @Option(names = "--vocab", paramLabel = "N", description = "vocabulary size, >= 260 (required without a preset)")
    String vocab;

    @Option(names = "--max-positions", paramLabel = "N", description = "longest sequence (default: 1024 gpt2, 2048 llama)")
    String maxPositions;

    @Option(names = "--tie-embeddings", paramLabel = "true|false", description = "LM head tied to the embeddings"
            + " (default: true gpt2, false llama)")
    String tieEmbeddings;

    @Option(names = "--attention-bias", arity = "0", description = "add Qwen2-style q/k/v biases (llama only;"
            + " config.json says qwen2)")
    boolean attentionBias;

    @Option(names = "--rope-theta", paramLabel = "T", description = "rotary base (llama only, default 10000)")
    String ropeTheta;

    @Option(names = "--rope-scaling", paramLabel = "S", description = {"rotary scaling (llama only): linear:FACTOR, or"
            + " llama3:FACTOR:ORIGINAL_POSITIONS", "(Llama 3.1's, with low/high frequency factors 1 and 4)"})
    String ropeScaling;

    @Option(names = "--seed", paramLabel = "S", description = "random seed (default 42)")
    String seed;

    @Option(names = "--dtype", paramLabel = "f32|f16|bf16|q8|q4|q4_k", description = {"tensor dtype (default f32);"
            + " q8, q4 (Q4_0, head Q6_K) and q4_k (Q4_K_M) write a GGUF file instead of a directory (llama only)"})
    String dtype;

    @Option(names = "--out", paramLabel = "DIR|FILE.gguf", description = "output directory, or GGUF file for a"
            + " quantized --dtype (required)")
    String out;

    /** Runs the command on {@code args}; returns its exit code (0 ok, 1 I/O failure, 2 bad arguments). */
    public static int run(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine line = Commands.line(new GenerateModelCommand());
        line.setOut(out);
        line.setErr(err);
        return line.execute(args);
    }

    /** Generates a preset's model into {@code dir}, saying so on {@code out}; fails the command if it cannot. */
    public static void generatePreset(String preset, Path dir, PrintWriter out, PrintWriter err) {
        if (run(new String[]{"--preset", preset, "--out", dir.toString()}, out, err) != 0) {
            throw new CommandFailedException("could not generate the " + preset + " model in " + dir);
        }
    }

    @Override
    public Integer call() {
        PrintWriter stdout = spec.commandLine().getOut();
        PrintWriter stderr = spec.commandLine().getErr();
        ModelConfig config;
        ModelGenerator.Options options;
        WeightQuantization quantization;
        long seedValue;
        Path dir;
        try {
            Map<String, String> given = given();
            config = shape != null ? shape(given) : config(given);
            quantization = quantization(dtype);
            options = ModelGenerator.Options.defaults()
                    .withDtype(dtype == null || quantization != null ? "f32" : dtype)
                    .withAttentionBias(attentionBias);
            if (shape != null) {
                options = options.withFastGaussians(); // billions of values: the fast generator
            }
            if (options.attentionBias() && config.architecture() != Architecture.LLAMA) {
                throw new IllegalArgumentException("--attention-bias applies to llama only");
            }
            if (quantization != null && (config.architecture() != Architecture.LLAMA || attentionBias
                    || config.experts() != null || config.qkNorm())) {
                throw new IllegalArgumentException("--dtype " + dtype + " writes a GGUF file of a llama model without"
                        + " biases");
            }
            if (attentionBias && (config.experts() != null || config.qkNorm())
                    && (config.experts() == null || config.experts().kind() != MixtureOfExperts.Kind.QWEN2_MOE)) {
                throw new IllegalArgumentException("--attention-bias applies to llama and qwen2-moe only");
            }
            seedValue = parseLong(given, "seed", 42);
            if (out == null || out.isBlank()) {
                throw new IllegalArgumentException("--out DIR is required");
            }
            dir = Path.of(out);
            if (quantization != null) {
                if (!out.endsWith(".gguf")) {
                    throw new IllegalArgumentException("--dtype " + dtype + " writes a GGUF file: --out must end in .gguf");
                }
                checkOutputDirectory(dir.toAbsolutePath().getParent());
            } else {
                checkOutputDirectory(dir);
            }
            TokenizerGenerator.specialTokens(config); // vocab sanity before writing anything
        } catch (IllegalArgumentException e) {
            throw Commands.usageError(spec, e.getMessage());
        }
        long t0 = System.nanoTime();
        try {
            if (quantization != null) {
                GgufModelGenerator.generate(config, seedValue, quantization, dir);
            } else {
                ModelGenerator.generate(config, seedValue, dir, options);
            }
        } catch (IOException e) {
            stderr.println("error: could not write the model to " + dir + ": " + describe(e));
            return 1;
        } catch (UncheckedIOException e) {
            stderr.println("error: could not write the model to " + dir + ": " + describe(e.getCause()));
            return 1;
        }
        long bytes = quantization != null ? fileBytes(dir) : directoryBytes(dir);
        stdout.printf("wrote %s model to %s: %d layers, hidden %d, %d/%d heads, intermediate %d, vocab %d, %s, seed %d%n",
                config.experts() != null ? config.experts().kind().modelType() + " (" + config.experts().experts()
                        + " experts, " + config.experts().perToken() + " per token)"
                        : config.qkNorm() ? "qwen3 (llama family, q/k norms)"
                        : options.attentionBias() ? "qwen2 (llama family, q/k/v biases)" : config.architecture().id(),
                dir.toAbsolutePath(), config.numLayers(), config.hiddenSize(),
                config.numHeads(), config.numKvHeads(), config.intermediateSize(), config.vocabSize(),
                quantization != null ? "GGUF " + quantization.id() : options.dtype(), seedValue);
        stdout.printf("  %,d parameters, %,d bytes (%s) in %.1f s%n", config.parameterCount(), bytes,
                quantization != null ? "one GGUF file" : "config.json, tokenizer.json, tokenizer_config.json,"
                        + " generation_config.json, model.safetensors", (System.nanoTime() - t0) / 1e9);
        return 0;
    }

    /** The quantization a GGUF {@code --dtype} names; null for the float dtypes of a model directory. */
    private static WeightQuantization quantization(String dtype) {
        if (dtype == null) {
            return null;
        }
        return WeightQuantization.byId(dtype).orElse(null);
    }

    /** A {@code --shape}: the real model's config, which no size option may change (only dtype, seed, output). */
    private ModelConfig shape(Map<String, String> given) {
        ModelConfig config = ModelShapes.named(shape).orElseThrow(() -> new IllegalArgumentException(
                "unknown --shape '" + shape + "' (" + String.join(", ", ModelShapes.names()) + ")"));
        for (String option : given.keySet()) {
            if (!option.equals("seed")) {
                throw new IllegalArgumentException("--shape takes no --" + option + ": it is a real model's shape");
            }
        }
        if (attentionBias) {
            throw new IllegalArgumentException("--shape takes no --attention-bias: it is a real model's shape");
        }
        return config;
    }

    private static long fileBytes(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return 0;
        }
    }

    /** The options given, by name without the dashes. */
    private Map<String, String> given() {
        Map<String, String> o = new LinkedHashMap<>();
        String[][] options = {{"preset", preset}, {"arch", arch}, {"layers", layers}, {"hidden", hidden},
                {"heads", heads}, {"kv-heads", kvHeads}, {"intermediate", intermediate}, {"vocab", vocab},
                {"max-positions", maxPositions}, {"tie-embeddings", tieEmbeddings}, {"rope-theta", ropeTheta},
                {"rope-scaling", ropeScaling}, {"seed", seed}, {"experts", experts},
                {"experts-per-token", expertsPerToken}, {"expert-intermediate", expertIntermediate}};
        for (String[] option : options) {
            if (option[1] != null) {
                o.put(option[0], option[1]);
            }
        }
        return o;
    }

    static ModelConfig config(Map<String, String> o) {
        Map<String, String> p = new LinkedHashMap<>();
        String preset = o.get("preset");
        if (preset != null) {
            switch (preset) {
                case "demo" -> p.putAll(Map.of("arch", "llama", "layers", "6", "hidden", "256", "heads", "8",
                        "kv-heads", "4", "intermediate", "688", "vocab", "4096", "max-positions", "1024"));
                case "bench-100m" -> p.putAll(Map.of("arch", "llama", "layers", "12", "hidden", "768", "heads", "12",
                        "kv-heads", "12", "intermediate", "2048", "vocab", "32000", "max-positions", "2048"));
                default -> throw new IllegalArgumentException("unknown preset '" + preset + "' (demo, bench-100m)");
            }
        }
        o.forEach((k, v) -> {
            if (!k.equals("preset")) {
                p.put(k, v);
            }
        });
        String archId = p.get("arch");
        if (archId == null) {
            throw new IllegalArgumentException("--arch llama|gpt2 (or --preset) is required");
        }
        Architecture arch;
        MixtureOfExperts.Kind kind = switch (archId) {
            case "mixtral" -> MixtureOfExperts.Kind.MIXTRAL;
            case "qwen2-moe" -> MixtureOfExperts.Kind.QWEN2_MOE;
            case "qwen3-moe" -> MixtureOfExperts.Kind.QWEN3_MOE;
            default -> null;
        };
        boolean qwen3 = archId.equals("qwen3");
        try {
            arch = kind != null || qwen3 ? Architecture.LLAMA : Architecture.fromId(archId);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown --arch '" + archId
                    + "' (llama, gpt2, qwen3, mixtral, qwen2-moe or qwen3-moe)");
        }
        if (kind == null) {
            for (String moeOption : new String[]{"experts", "experts-per-token", "expert-intermediate"}) {
                if (p.containsKey(moeOption)) {
                    throw new IllegalArgumentException("--" + moeOption + " applies to mixtral, qwen2-moe and qwen3-moe only");
                }
            }
        }
        boolean gpt2 = arch == Architecture.GPT2;
        int layers = positiveInt(p, "layers", null);
        int hidden = positiveInt(p, "hidden", null);
        int heads = positiveInt(p, "heads", null);
        int kvHeads = positiveInt(p, "kv-heads", (long) heads);
        if (gpt2 && kvHeads != heads) {
            throw new IllegalArgumentException("gpt2 has no grouped-query attention: --kv-heads must equal --heads");
        }
        int intermediate = positiveInt(p, "intermediate", gpt2 ? 4L * hidden : ((8L * hidden / 3) + 7) / 8 * 8);
        int vocab = positiveInt(p, "vocab", null);
        int maxPositions = positiveInt(p, "max-positions", gpt2 ? 1024L : 2048L);
        boolean tie = parseBoolean(p, "tie-embeddings", gpt2);
        checkHeads(arch, hidden, heads, kvHeads);
        if (gpt2) {
            if (p.containsKey("rope-theta") || p.containsKey("rope-scaling")) {
                throw new IllegalArgumentException("--rope-theta and --rope-scaling apply to llama only");
            }
            return new ModelConfig(arch, layers, hidden, heads, heads, intermediate, vocab, maxPositions,
                    1e-5, 0, tie, -1, -1);
        }
        ModelConfig config = new ModelConfig(arch, layers, hidden, heads, kvHeads, intermediate, vocab, maxPositions,
                1e-5, ropeTheta(p), tie, 1, 2, ropeScaling(p.get("rope-scaling")));
        if (kind == null) {
            return qwen3 ? config.withQkNormAndExperts(true, null) : config;
        }
        int count = positiveInt(p, "experts", 8L);
        int perToken = positiveInt(p, "experts-per-token", 2L);
        if (perToken > count) {
            throw new IllegalArgumentException("--experts-per-token " + perToken + " is more than --experts " + count);
        }
        boolean mixtral = kind == MixtureOfExperts.Kind.MIXTRAL;
        int expertWidth = positiveInt(p, "expert-intermediate", (long) (mixtral ? intermediate : Math.max(8, intermediate / 16 * 8)));
        if (mixtral && expertWidth != intermediate) {
            throw new IllegalArgumentException("a mixtral expert's width is --intermediate: leave out --expert-intermediate");
        }
        return config.withExperts(new MixtureOfExperts(kind, count, perToken, expertWidth,
                kind == MixtureOfExperts.Kind.QWEN2_MOE ? intermediate : 0, kind != MixtureOfExperts.Kind.QWEN2_MOE, 1,
                java.util.List.of()));
    }

    private static double ropeTheta(Map<String, String> p) {
        String v = p.get("rope-theta");
        if (v == null) {
            return 10000.0;
        }
        double theta = parseNumber("--rope-theta", v);
        if (!(theta > 1) || Double.isInfinite(theta)) {
            throw new IllegalArgumentException("--rope-theta must be a number above 1, was '" + v + "'");
        }
        return theta;
    }

    /** {@code linear:FACTOR} or {@code llama3:FACTOR:ORIGINAL_POSITIONS}; null without the option. */
    static RopeScaling ropeScaling(String v) {
        if (v == null) {
            return null;
        }
        String[] parts = v.split(":", -1);
        if (parts.length == 2 && parts[0].equals(RopeScaling.LINEAR)) {
            return RopeScaling.linear(parseNumber("--rope-scaling factor", parts[1]));
        }
        if (parts.length == 3 && parts[0].equals(RopeScaling.LLAMA3)) {
            double original = parseNumber("--rope-scaling original positions", parts[2]);
            if (original != Math.rint(original) || original < 1 || original > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--rope-scaling original positions must be a positive integer, was '"
                        + parts[2] + "'");
            }
            return RopeScaling.llama3(parseNumber("--rope-scaling factor", parts[1]), 1.0, 4.0, (int) original);
        }
        throw new IllegalArgumentException("--rope-scaling must be linear:FACTOR or llama3:FACTOR:ORIGINAL_POSITIONS, was '"
                + v + "'");
    }

    private static double parseNumber(String what, String v) {
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(what + " must be a number, was '" + v + "'");
        }
    }

    /**
     * The attention shape checks {@link ModelConfig} and the workers make, reported in terms of the options: the
     * heads split the width evenly, the kv heads group the heads evenly, and Llama's rotary embeddings rotate
     * pairs of dimensions, so its head dimension must be even (the workers refuse to load the model otherwise).
     */
    static void checkHeads(Architecture arch, int hidden, int heads, int kvHeads) {
        if (hidden % heads != 0) {
            throw new IllegalArgumentException("--hidden " + hidden + " is not divisible by --heads " + heads);
        }
        if (heads % kvHeads != 0) {
            throw new IllegalArgumentException("--heads " + heads + " is not divisible by --kv-heads " + kvHeads);
        }
        int headDim = hidden / heads;
        if (arch == Architecture.LLAMA && headDim % 2 != 0) {
            throw new IllegalArgumentException("--hidden " + hidden + " / --heads " + heads + " gives head dimension "
                    + headDim + ", but llama's rotary embeddings need an even head dimension");
        }
    }

    /** An existing file (or a file where a parent directory should be) cannot become the output directory. */
    static void checkOutputDirectory(Path dir) {
        for (Path p = dir.toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p)) {
                return;
            }
            if (Files.exists(p)) {
                throw new IllegalArgumentException(p.equals(dir.toAbsolutePath())
                        ? "--out " + dir + " exists and is not a directory"
                        : "--out " + dir + ": " + p + " exists and is not a directory");
            }
        }
    }

    /** The reason of an I/O failure; a file-system exception's message alone is often just the path. */
    private static String describe(IOException e) {
        if (e instanceof FileSystemException f) {
            return f.getClass().getSimpleName() + " on " + f.getFile()
                    + (f.getReason() == null ? "" : ": " + f.getReason());
        }
        return e.getMessage();
    }

    /** A size option, or {@code fallback} when absent (null: the option is required); must be a positive int. */
    private static int positiveInt(Map<String, String> p, String key, Long fallback) {
        if (!p.containsKey(key) && fallback == null) {
            throw new IllegalArgumentException("--" + key + " is required (or use --preset)");
        }
        long v = parseLong(p, key, fallback == null ? 0 : fallback);
        if (v <= 0) {
            throw new IllegalArgumentException("--" + key + " must be positive, got " + v);
        }
        if (v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--" + key + " is too large: " + v);
        }
        return (int) v;
    }

    private static long parseLong(Map<String, String> p, String key, long fallback) {
        String v = p.get(key);
        if (v == null) {
            return fallback;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be an integer, got '" + v + "'");
        }
    }

    private static boolean parseBoolean(Map<String, String> p, String key, boolean fallback) {
        String v = p.get(key);
        if (v == null) {
            return fallback;
        }
        return switch (v.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "true", "yes", "1" -> true;
            case "false", "no", "0" -> false;
            default -> throw new IllegalArgumentException("--" + key + " expects true or false, got '" + v + "'");
        };
    }

    private static long directoryBytes(Path dir) {
        long total = 0;
        for (String f : new String[]{"config.json", "tokenizer.json", "model.safetensors"}) {
            try {
                total += Files.size(dir.resolve(f));
            } catch (IOException e) {
                // reported as missing bytes only
            }
        }
        return total;
    }
}
