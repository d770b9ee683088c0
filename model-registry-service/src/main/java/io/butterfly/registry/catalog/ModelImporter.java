package io.butterfly.registry.catalog;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.model.GenerationConfig;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.TokenizerConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.ShardQuantizer;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import io.butterfly.common.error.ErrorCode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Repackages a Hugging Face model directory ({@code config.json}, one or more {@code *.safetensors},
 * {@code tokenizer.json}, optionally {@code generation_config.json}, {@code tokenizer_config.json} and
 * {@code chat_template.jinja}), or a GGUF file ({@link GgufImporter}), into per-stage shards and builds their manifest.
 * Tensor bytes and dtypes are copied unchanged, or, when asked, matrices are quantized on the way ({@link
 * WeightQuantization}: the shards hold ggml blocks as {@code QuantizedTensors} describes, signed like any shard, and
 * workers never quantize). Every tensor is streamed through buffers of a few megabytes, so an import takes the same
 * memory whatever the model's size. Layout of the output directory:
 * <ul>
 *   <li>{@code config.json}, {@code tokenizer.json}, and each of {@code generation_config.json},
 *       {@code tokenizer_config.json} and {@code chat_template.jinja} there is: copied verbatim;</li>
 *   <li>{@code embed.safetensors}: token (and, for GPT-2, position) embeddings;</li>
 *   <li>{@code layer-00000.safetensors} ...: one transformer block each;</li>
 *   <li>{@code head.safetensors}: final norm and LM head; with tied embeddings (no {@code lm_head.weight})
 *       it also holds a copy of the token embedding under its original name, which the last stage projects with.</li>
 * </ul>
 */
public final class ModelImporter {

    /** Bumped when the output layout changes, so stored models are re-imported. */
    public static final String LAYOUT_VERSION = "3";

    public static final String CONFIG_FILE = "config.json";
    public static final String TOKENIZER_FILE = "tokenizer.json";
    public static final String EMBED_FILE = "embed.safetensors";
    public static final String HEAD_FILE = "head.safetensors";

    /** The dtypes a worker widens to float32 (docs/models.md). */
    private static final Set<String> LOADABLE_DTYPES = Set.of("F32", "F16", "BF16");
    private static final Pattern LAYER = Pattern.compile("(?:^|\\.)(?:layers|h)\\.(\\d+)\\.");
    private static final Pattern TOKEN_EMBEDDING = Pattern.compile("(?:^|\\.)(?:embed_tokens|wte)\\.weight$");
    private static final Pattern POSITION_EMBEDDING = Pattern.compile("(?:^|\\.)wpe\\.weight$");
    private static final Pattern LM_HEAD = Pattern.compile("(?:^|\\.)lm_head\\.weight$");

    /** Files imported when the directory has them, with their kinds: the coordinator's or every stage's. */
    private static final Map<String, FileKind> OPTIONAL_FILES = optionalFiles();

    private final Clock clock;

    public ModelImporter(Clock clock) {
        this.clock = clock;
    }

    private static Map<String, FileKind> optionalFiles() {
        Map<String, FileKind> files = new LinkedHashMap<>();
        files.put(GenerationConfig.FILE, FileKind.CONFIG);
        files.put(TokenizerConfig.FILE, FileKind.TOKENIZER_CONFIG);
        files.put(TokenizerConfig.CHAT_TEMPLATE_FILE, FileKind.CHAT_TEMPLATE);
        return files;
    }

    public static String layerFileName(int layer) {
        return String.format("layer-%05d.safetensors", layer);
    }

    /** The source files an import reads, in a stable order. Fails naming {@code path} when the directory is unusable. */
    public static List<Path> sourceFiles(Path sourceDir) throws IOException {
        if (!Files.isDirectory(sourceDir)) {
            throw invalid("path", sourceDir + " is not a directory");
        }
        for (String required : List.of(CONFIG_FILE, TOKENIZER_FILE)) {
            if (!Files.isRegularFile(sourceDir.resolve(required))) {
                throw invalid("path", sourceDir + " has no " + required);
            }
        }
        List<Path> weights;
        try (Stream<Path> s = Files.list(sourceDir)) {
            weights = s.filter(p -> p.getFileName().toString().endsWith(".safetensors") && Files.isRegularFile(p))
                    .sorted()
                    .toList();
        }
        if (weights.isEmpty()) {
            throw invalid("path", sourceDir + " has no *.safetensors file");
        }
        List<Path> all = new ArrayList<>();
        all.add(sourceDir.resolve(CONFIG_FILE));
        all.add(sourceDir.resolve(TOKENIZER_FILE));
        for (String optional : OPTIONAL_FILES.keySet()) {
            if (Files.isRegularFile(sourceDir.resolve(optional))) {
                all.add(sourceDir.resolve(optional));
            }
        }
        all.addAll(weights);
        List<Path> roots = allowedRoots(sourceDir.toRealPath());
        for (Path p : all) {
            // Whoever writes a model directory must not make the registry copy and serve its other files.
            Path real = p.toRealPath();
            if (roots.stream().noneMatch(real::startsWith)) {
                throw invalid("path", p.getFileName() + " of " + sourceDir + " links to a file outside the model directory");
            }
        }
        return all;
    }

    /**
     * Where a model directory's files may really be: in the directory itself, and for a snapshot of the Hugging
     * Face hub cache ({@code models--org--name/snapshots/<revision>/}, whose files link to {@code ../../blobs/}) in
     * its repository's blobs, provided that is a directory and not a link to elsewhere.
     */
    private static List<Path> allowedRoots(Path realDir) {
        List<Path> roots = new ArrayList<>(List.of(realDir));
        Path snapshots = realDir.getParent();
        if (snapshots != null && snapshots.getParent() != null && snapshots.getFileName().toString().equals("snapshots")) {
            Path blobs = snapshots.getParent().resolve("blobs");
            if (Files.isDirectory(blobs, LinkOption.NOFOLLOW_LINKS)) {
                roots.add(blobs);
            }
        }
        return roots;
    }

    /** Whether {@code source} is a GGUF file rather than a model directory. */
    public static boolean isGguf(Path source) {
        return Files.isRegularFile(source) && source.getFileName().toString().toLowerCase(java.util.Locale.ROOT).endsWith(".gguf");
    }

    /**
     * A fingerprint of the source (names, sizes, modification times), of the quantization asked for and of this
     * importer's layout: a stored import with the same fingerprint need not be redone.
     */
    public static String fingerprint(Path source, WeightQuantization quantization) throws IOException {
        MessageDigest d = Sha256.newDigest();
        d.update(("layout " + LAYOUT_VERSION + "\n").getBytes(StandardCharsets.UTF_8));
        d.update(("quantize " + (quantization == null ? "none" : quantization.id()) + "\n").getBytes(StandardCharsets.UTF_8));
        List<Path> files = isGguf(source) ? List.of(source) : sourceFiles(source);
        for (Path p : files) {
            String line = p.getFileName() + " " + Files.size(p) + " " + Files.getLastModifiedTime(p).toMillis() + "\n";
            d.update(line.getBytes(StandardCharsets.UTF_8));
        }
        return Sha256.toHex(d.digest());
    }

    /** Imports {@code sourceDir} as {@code modelId} into the (empty or absent) directory {@code outDir}, unquantized. */
    public Manifest importModel(String modelId, Path sourceDir, Path outDir) throws IOException {
        return importModel(modelId, sourceDir, outDir, null);
    }

    /**
     * Imports {@code source} (a model directory or a GGUF file) as {@code modelId} into the (empty or absent) directory
     * {@code outDir}, quantizing a directory's matrices as {@code quantization} says (null: as they are).
     */
    public Manifest importModel(String modelId, Path source, Path outDir, WeightQuantization quantization)
            throws IOException {
        if (isGguf(source)) {
            if (quantization != null) {
                throw invalid("quantize", source + " is a GGUF file: its tensors are served as they are, not quantized again");
            }
            return new GgufImporter(clock).importGguf(modelId, source, outDir);
        }
        Path sourceDir = source;
        List<Path> sources = sourceFiles(sourceDir);
        ModelConfig config;
        try {
            config = ModelConfig.read(sourceDir.resolve(CONFIG_FILE));
        } catch (RuntimeException e) {
            throw invalid("path", sourceDir.resolve(CONFIG_FILE) + " is not a usable model config: " + e.getMessage());
        }
        boolean generationConfig = sources.contains(sourceDir.resolve(GenerationConfig.FILE));
        if (generationConfig) {
            try {
                // Checked now: the coordinator reads its stop tokens from it, and would refuse it only when serving.
                GenerationConfig.applyTo(config, sourceDir.resolve(GenerationConfig.FILE));
            } catch (RuntimeException e) {
                throw invalid("path", sourceDir + ": " + e.getMessage());
            }
        }
        try {
            // Checked now: the coordinator renders chats with it, and would refuse it only when serving.
            TokenizerConfig.read(sourceDir);
        } catch (RuntimeException e) {
            throw invalid("path", sourceDir + ": " + e.getMessage());
        }
        if (quantization != null && config.architecture() != Architecture.LLAMA) {
            throw invalid("quantize", "only Llama-family models are quantized; " + sourceDir + " holds a "
                    + config.architecture().id() + " model");
        }
        Files.createDirectories(outDir);

        List<SafetensorsFile> opened = new ArrayList<>();
        try {
            // Every tensor of the model, by name, with the file it lives in.
            Map<String, SafetensorsFile> owner = new LinkedHashMap<>();
            for (Path p : sources.stream().filter(s -> s.getFileName().toString().endsWith(".safetensors")).toList()) {
                SafetensorsFile f;
                try {
                    f = SafetensorsFile.open(p);
                } catch (RuntimeException e) {
                    throw invalid("path", p + " is not a valid safetensors file: " + e.getMessage());
                }
                opened.add(f);
                for (String name : f.tensors().keySet()) {
                    if (owner.putIfAbsent(name, f) != null) {
                        throw invalid("path", "tensor " + name + " appears in more than one file of " + sourceDir);
                    }
                }
            }

            List<String> embed = new ArrayList<>();
            TreeMap<Integer, List<String>> layers = new TreeMap<>();
            List<String> head = new ArrayList<>();
            String tokenEmbedding = null;
            boolean hasLmHead = false;
            long parameters = 0;
            Map<String, Long> dtypeElements = new HashMap<>();
            for (Map.Entry<String, SafetensorsFile> e : owner.entrySet()) {
                String name = e.getKey();
                TensorInfo info = e.getValue().info(name);
                if (!LOADABLE_DTYPES.contains(info.dtype())) {
                    // Signed and served, such a model would only fail later, on every worker that loads it.
                    throw invalid("path", "tensor " + name + " is " + info.dtype()
                            + "; workers load F32, F16 or BF16 weights only");
                }
                parameters += info.numElements();
                dtypeElements.merge(info.dtype(), info.numElements(), Long::sum);
                Matcher m = LAYER.matcher(name);
                if (m.find()) {
                    String digits = m.group(1);
                    // More digits than an int holds is no layer of any config either (and no NumberFormatException).
                    int layer = digits.length() > 9 ? Integer.MAX_VALUE : Integer.parseInt(digits);
                    if (layer >= config.numLayers()) {
                        throw invalid("path", "tensor " + name + " belongs to layer " + digits + " but the config has "
                                + config.numLayers() + " layers");
                    }
                    layers.computeIfAbsent(layer, k -> new ArrayList<>()).add(name);
                } else if (TOKEN_EMBEDDING.matcher(name).find()) {
                    embed.add(name);
                    tokenEmbedding = name;
                } else if (POSITION_EMBEDDING.matcher(name).find()) {
                    embed.add(name);
                } else {
                    if (LM_HEAD.matcher(name).find()) {
                        hasLmHead = true;
                    }
                    head.add(name);
                }
            }
            for (int i = 0; i < config.numLayers(); i++) {
                if (!layers.containsKey(i)) {
                    throw invalid("path", sourceDir + " has no tensors for layer " + i + " of " + config.numLayers());
                }
            }
            if (tokenEmbedding == null) {
                throw invalid("path", sourceDir + " has no token embedding (embed_tokens.weight or wte.weight)");
            }
            if (!hasLmHead) {
                // Tied embeddings: the last stage projects with the token embedding, so the head carries a copy.
                head.add(tokenEmbedding);
            }

            List<ManifestFile> files = new ArrayList<>();
            files.add(copy(sourceDir.resolve(CONFIG_FILE), outDir.resolve(CONFIG_FILE), FileKind.CONFIG));
            files.add(copy(sourceDir.resolve(TOKENIZER_FILE), outDir.resolve(TOKENIZER_FILE), FileKind.TOKENIZER));
            for (Map.Entry<String, FileKind> optional : OPTIONAL_FILES.entrySet()) {
                Path file = sourceDir.resolve(optional.getKey());
                if (sources.contains(file)) {
                    files.add(copy(file, outDir.resolve(optional.getKey()), optional.getValue()));
                }
            }
            Map<String, GgmlType> quantized = new HashMap<>();
            files.add(shard(owner, embed, outDir.resolve(EMBED_FILE), FileKind.EMBEDDING, null, quantization, config, quantized));
            for (Map.Entry<Integer, List<String>> l : layers.entrySet()) {
                files.add(shard(owner, l.getValue(), outDir.resolve(layerFileName(l.getKey())), FileKind.LAYER, l.getKey(),
                        quantization, config, quantized));
            }
            files.add(shard(owner, head, outDir.resolve(HEAD_FILE), FileKind.HEAD, null, quantization, config, quantized));
            quantized.forEach((name, type) -> {
                long elements = owner.get(name).info(name).numElements();
                dtypeElements.merge(owner.get(name).info(name).dtype(), -elements, Long::sum);
                dtypeElements.merge(type.name(), elements, Long::sum);
            });
            return manifest(modelId, config, parameters, dtypeElements, files);
        } finally {
            for (SafetensorsFile f : opened) {
                f.close();
            }
        }
    }

    /** The manifest of imported files; its dtype is the one holding most parameters (e.g. "Q4_0" once quantized). */
    Manifest manifest(String modelId, ModelConfig config, long parameters, Map<String, Long> dtypeElements,
                      List<ManifestFile> files) {
        String merkleRoot = MerkleTree.rootHex(files.stream().map(ManifestFile::checksum).toList());
        String dtype = dtypeElements.entrySet().stream()
                .max(Map.Entry.comparingByValue())
                .map(Map.Entry::getKey)
                .orElse("F32");
        return new Manifest(modelId, config.architecture().id(), merkleRoot.substring(0, 12), config.numLayers(),
                parameters, config.hiddenSize(), config.vocabSize(), dtype, files, merkleRoot, clock.millis(), null, null);
    }

    private static ManifestFile copy(Path from, Path to, FileKind kind) throws IOException {
        Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        return describe(to, kind, null, kind == FileKind.CHAT_TEMPLATE ? "jinja" : "json");
    }

    /**
     * One shard: the tensors streamed from their files, matrices quantized as {@code quantization} says (the types
     * they got are added to {@code quantized}). Unquantized shards carry no metadata and read exactly like the worker's
     * reference splitting.
     */
    private static ManifestFile shard(Map<String, SafetensorsFile> owner, List<String> names, Path out, FileKind kind,
                                      Integer layer, WeightQuantization quantization, ModelConfig config,
                                      Map<String, GgmlType> quantized) throws IOException {
        List<ShardQuantizer.Source> sources = names.stream().map(n -> new ShardQuantizer.Source(n, owner.get(n))).toList();
        quantized.putAll(ShardQuantizer.write(out, sources, quantization, config));
        return describe(out, kind, layer, "safetensors");
    }

    static ManifestFile describe(Path file, FileKind kind, Integer layer, String format) throws IOException {
        return new ManifestFile(file.getFileName().toString(), Files.size(file), "sha256", Sha256.hexOfFile(file), kind,
                layer, layer == null ? null : layer + 1, format);
    }

    static ButterflyException invalid(String field, String message) {
        return new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.INVALID_ARGUMENT, message,
                Map.of("field", field), null);
    }
}
