package io.butterfly.coordinator.model;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.model.GenerationConfig;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.TokenizerConfig;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.slf4j.LoggerFactory;

/**
 * Fetches, from the model registry, what the coordinator itself needs of the served model: the manifest (for
 * planning), config.json, tokenizer.json and the chat template with its special tokens (tokenizer_config.json,
 * chat_template.jinja), each verified like any other shard.
 */
public class ModelCatalog implements AutoCloseable {

    /**
     * @param modelId              the model to serve (as the registry knows it)
     * @param dataDir              where the coordinator keeps the tokenizer and config it fetched
     * @param trustedPublisherKeys hex Ed25519 keys whose signed manifests are accepted (none: every one is refused)
     */
    public record Settings(String modelId, Path dataDir, List<String> trustedPublisherKeys) {
    }

    private final Settings settings;
    private final ModelRegistry registry;
    private final Tokenizer.Loader tokenizers;
    private final ChatTemplate.Compiler templates;
    private final ManifestVerifier verifier;
    private volatile ServedModel served;
    /** Why the model cannot be served, while the registry says its import failed; null otherwise. */
    private volatile Unavailable unavailable;

    /** The registry's cause for not serving the model, and since when (epoch milliseconds) it has said so. */
    public record Unavailable(String cause, long sinceMs) {
    }

    public ModelCatalog(Settings settings, ModelRegistry registry, Tokenizer.Loader tokenizers,
                        ChatTemplate.Compiler templates) {
        this.settings = settings;
        this.registry = registry;
        this.tokenizers = tokenizers;
        this.templates = templates;
        this.verifier = new ManifestVerifier(settings.trustedPublisherKeys());
        // Loading the tokenizer's native library takes over a second, and the first manifest fetch from a
        // freshly started registry as long again: do both while the coordinator joins and its control log
        // elects a leader, instead of on the way to the first assignment.
        DaemonThreads.start("model-catalog-warm-up", this::warmUp);
    }

    private void warmUp() {
        try {
            tokenizers.preload();
            load();
        } catch (Exception | LinkageError e) {
            // bootstrap's own load() reports it, and retries
            LoggerFactory.getLogger(ModelCatalog.class).debug("served model not loaded ahead: {}", e.toString());
        }
    }

    /**
     * Fetches and verifies (trusted publisher, signature, Merkle root) the manifest before using it; the files
     * and tokenizer are loaded again only when the manifest changed. One load at a time: the warm-up's and
     * bootstrap's would otherwise download into the same files.
     */
    public synchronized ServedModel load() throws IOException {
        Manifest fetched;
        try {
            fetched = registry.manifest(settings.modelId());
        } catch (ModelImportFailedException e) {
            Unavailable before = unavailable;
            unavailable = new Unavailable(e.getMessage(), before != null ? before.sinceMs() : System.currentTimeMillis());
            throw e;
        }
        unavailable = null;
        Manifest manifest = verifier.verifyFor(settings.modelId(), fetched);
        if (served != null && served.manifest().equals(manifest)) {
            return served; // loaded already (by the warm-up) from this very manifest
        }
        List<String> wanted = manifest.files().stream()
                .filter(ManifestFile::neededByCoordinator)
                .map(ManifestFile::name)
                .toList();
        Path dir = directory(manifest.modelId());
        registry.download(manifest, wanted, dir);
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        if (wanted.contains(GenerationConfig.FILE)) { // only a file this manifest lists: not one an older one left
            // Stop tokens as transformers' generate() takes them: generation_config.json's when it names any.
            config = GenerationConfig.applyTo(config, dir.resolve(GenerationConfig.FILE));
        }
        // Prompts are tokenized exactly as the tokenizer file says (its own special-token rules).
        served = new ServedModel(manifest, config, tokenizers.open(dir.resolve("tokenizer.json")),
                chatTemplate(manifest, dir));
        return served;
    }

    /** The manifest's chat template, if it lists one; only files it lists are read (not one an older one left). */
    private ChatTemplate chatTemplate(Manifest manifest, Path dir) throws IOException {
        Path configFile = null;
        Path templateFile = null;
        for (ManifestFile f : manifest.files()) {
            if (f.kind() == FileKind.TOKENIZER_CONFIG) {
                configFile = dir.resolve(f.name());
            } else if (f.kind() == FileKind.CHAT_TEMPLATE) {
                templateFile = dir.resolve(f.name());
            }
        }
        TokenizerConfig config = TokenizerConfig.read(configFile, templateFile);
        return config.chatTemplate() == null ? null
                : templates.compile(config.chatTemplate(), config.bosToken(), config.eosToken());
    }

    /** Where this replica keeps the files it fetched of {@code modelId}. */
    public Path directory(String modelId) {
        return settings.dataDir().resolve("models").resolve(modelId);
    }

    /** Why the model cannot be served, while the registry says its import failed. */
    public java.util.Optional<Unavailable> unavailable() {
        return java.util.Optional.ofNullable(unavailable);
    }

    /** The served model, once bootstrap fetched it. */
    public ServedModel served() {
        return served;
    }

    /** Whether this replica holds the publication with {@code merkleRoot}: its tokenizer and config. */
    public boolean holds(String merkleRoot) {
        ServedModel model = served;
        return model != null && model.manifest().merkleRoot().equals(merkleRoot);
    }

    /**
     * The publication the cluster serves ({@code merkleRoot}, from the control log), fetched now if this replica
     * does not hold it yet: a replica may be asked right after the cluster became READY, before its background
     * fetch ({@code ReplicaModelLoader}) finished. Unavailable (503, retry) when the registry cannot give it.
     */
    public ServedModel servedFor(String merkleRoot) {
        if (holds(merkleRoot)) {
            return served;
        }
        ServedModel model;
        try {
            model = load();
        } catch (ButterflyException e) {
            throw new ButterflyException(e.code(), ErrorKind.UNAVAILABLE, notHeld(merkleRoot) + e.getMessage(), e.context(), e);
        } catch (RegistryUnavailableException e) {
            throw new ButterflyException(ErrorCode.MANIFEST_NOT_FOUND, ErrorKind.UNAVAILABLE,
                    notHeld(merkleRoot) + e.getMessage(), Map.of(), e);
        } catch (IOException | RuntimeException e) {
            throw new ButterflyException(ErrorCode.MANIFEST_NOT_FOUND, ErrorKind.UNAVAILABLE, notHeld(merkleRoot) + e, Map.of(), e);
        }
        if (!model.manifest().merkleRoot().equals(merkleRoot)) {
            // This replica's tokenizer and config would be of another publication than the workers' weights.
            throw new ButterflyException(ErrorCode.MERKLE_ROOT_MISMATCH, ErrorKind.UNAVAILABLE, notHeld(merkleRoot)
                    + "the registry serves model " + model.manifest().modelId() + " with merkle root "
                    + model.manifest().merkleRoot());
        }
        return model;
    }

    private String notHeld(String merkleRoot) {
        return "this coordinator has not fetched model " + settings.modelId() + " (merkle root " + merkleRoot
                + ") from the registry: ";
    }

    @Override
    public void close() {
        ServedModel model = served;
        if (model != null) {
            model.tokenizer().close();
        }
    }
}
