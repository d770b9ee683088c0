package io.butterfly.common.model.generate;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * {@code butterfly model generate}: writes a seeded random Hugging Face model directory (config.json,
 * tokenizer.json, model.safetensors). See {@link #USAGE}.
 */
public final class GenerateModelCommand {

    public static final String USAGE = """
            usage: ./butterfly model generate [--preset demo|bench-100m] [options] --out DIR
              --preset NAME        demo (Llama, 6 layers, hidden 256, 8/4 heads, vocab 4096) or
                                   bench-100m (Llama, 12 layers, hidden 768, 12 heads, vocab 32000, fp32);
                                   explicit options override the preset
              --arch llama|gpt2    architecture (required without a preset)
              --layers N           transformer blocks (required without a preset)
              --hidden N           model width (required without a preset)
              --heads N            attention heads (required without a preset)
              --kv-heads N         key/value heads (default: heads; must equal heads for gpt2)
              --intermediate N     MLP width (default: 4*hidden for gpt2, ~8/3*hidden rounded to 8 for llama)
              --vocab N            vocabulary size, >= 258 (required without a preset)
              --max-positions N    longest sequence (default: 1024 gpt2, 2048 llama)
              --tie-embeddings true|false   LM head tied to the embeddings (default: true gpt2, false llama)
              --attention-bias     add Qwen2-style q/k/v biases (llama only; config.json says qwen2)
              --rope-theta T       rotary base (llama only, default 10000)
              --rope-scaling S     rotary scaling (llama only): linear:FACTOR, or llama3:FACTOR:ORIGINAL_POSITIONS
                                   (Llama 3.1's, with low/high frequency factors 1 and 4)
              --seed S             random seed (default 42)
              --dtype f32|f16|bf16 tensor dtype (default f32)
              --out DIR            output directory (required)
            """;

    private static final Set<String> FLAGS = Set.of("attention-bias", "help");
    private static final Set<String> OPTIONS = Set.of("preset", "arch", "layers", "hidden", "heads", "kv-heads",
            "intermediate", "vocab", "max-positions", "tie-embeddings", "seed", "dtype", "out", "rope-theta", "rope-scaling");

    private GenerateModelCommand() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != 0) {
            System.exit(code);
        }
    }

    /** Runs the command; returns the process exit code (0 ok, 1 I/O failure, 2 bad arguments). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        Map<String, String> opts;
        ModelConfig config;
        ModelGenerator.Options options;
        long seed;
        Path dir;
        try {
            opts = parse(args);
            if (opts.containsKey("help")) {
                out.print(USAGE);
                return 0;
            }
            config = config(opts);
            options = ModelGenerator.Options.defaults()
                    .withDtype(opts.getOrDefault("dtype", "f32"))
                    .withAttentionBias(opts.containsKey("attention-bias"));
            if (options.attentionBias() && config.architecture() != Architecture.LLAMA) {
                throw new IllegalArgumentException("--attention-bias applies to llama only");
            }
            seed = parseLong(opts, "seed", 42);
            String o = opts.get("out");
            if (o == null || o.isBlank()) {
                throw new IllegalArgumentException("--out DIR is required");
            }
            dir = Path.of(o);
            checkOutputDirectory(dir);
            TokenizerGenerator.specialTokens(config); // vocab sanity before writing anything
        } catch (IllegalArgumentException e) {
            err.println("error: " + e.getMessage());
            err.print(USAGE);
            return 2;
        }
        long t0 = System.nanoTime();
        try {
            ModelGenerator.generate(config, seed, dir, options);
        } catch (IOException e) {
            err.println("error: could not write the model to " + dir + ": " + describe(e));
            return 1;
        } catch (UncheckedIOException e) {
            err.println("error: could not write the model to " + dir + ": " + describe(e.getCause()));
            return 1;
        }
        long bytes = directoryBytes(dir);
        out.printf("wrote %s model to %s: %d layers, hidden %d, %d/%d heads, intermediate %d, vocab %d, %s, seed %d%n",
                options.attentionBias() ? "qwen2 (llama family, q/k/v biases)" : config.architecture().id(),
                dir.toAbsolutePath(), config.numLayers(), config.hiddenSize(),
                config.numHeads(), config.numKvHeads(), config.intermediateSize(), config.vocabSize(),
                options.dtype(), seed);
        out.printf("  %,d parameters, %,d bytes (config.json, tokenizer.json, model.safetensors) in %.1f s%n",
                config.parameterCount(), bytes, (System.nanoTime() - t0) / 1e9);
        return 0;
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
        try {
            arch = Architecture.fromId(archId);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown --arch '" + archId + "' (llama or gpt2)");
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
        return new ModelConfig(arch, layers, hidden, heads, kvHeads, intermediate, vocab, maxPositions,
                1e-5, ropeTheta(p), tie, 1, 2, ropeScaling(p.get("rope-scaling")));
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

    static Map<String, String> parse(String[] args) {
        Map<String, String> o = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h")) {
                a = "--help";
            }
            if (!a.startsWith("--")) {
                throw new IllegalArgumentException("unexpected argument '" + a + "'");
            }
            String key = a.substring(2);
            String value = null;
            int eq = key.indexOf('=');
            if (eq >= 0) {
                value = key.substring(eq + 1);
                key = key.substring(0, eq);
            }
            if (FLAGS.contains(key)) {
                if (value != null) {
                    throw new IllegalArgumentException("--" + key + " takes no value");
                }
                o.put(key, "true");
                continue;
            }
            if (!OPTIONS.contains(key)) {
                throw new IllegalArgumentException("unknown option --" + key);
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("--" + key + " needs a value");
                }
                value = args[++i];
            }
            o.put(key, value);
        }
        return o;
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
