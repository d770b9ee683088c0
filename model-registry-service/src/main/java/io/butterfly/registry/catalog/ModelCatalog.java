package io.butterfly.registry.catalog;

import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.registry.store.ModelStore;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The models the registry serves: imports (idempotent: an unchanged source reuses the stored shards)
 * and lookups. Imports are serialized; lookups are lock-free.
 */
public class ModelCatalog {

    private static final Logger log = LoggerFactory.getLogger(ModelCatalog.class);

    private final ModelStore store;
    private final ModelImporter importer;
    private final Map<String, Manifest> manifests = new ConcurrentHashMap<>();
    /** Imports that failed, by model id, until one succeeds: whoever asks for the model is told why it is missing. */
    private final Map<String, ImportFailure> failures = new ConcurrentHashMap<>();
    private final Object importLock = new Object();

    private final UnaryOperator<Manifest> signer;

    /** A catalog serving unsigned manifests (tests of import and transfer only). */
    public ModelCatalog(ModelStore store, ModelImporter importer) {
        this(store, importer, UnaryOperator.identity());
    }

    /** @param signer signs each manifest before it is served (the registry's publisher key) */
    public ModelCatalog(ModelStore store, ModelImporter importer, UnaryOperator<Manifest> signer) {
        this.store = store;
        this.importer = importer;
        this.signer = signer;
    }

    /**
     * An import that failed: which model, from where, why (the exception's message, or what ran out: memory, disk),
     * and when.
     */
    public record ImportFailure(String modelId, String source, String cause, long atMillis) {
    }

    /** A served file: its manifest entry and where its bytes are. */
    public record StoredFile(Manifest manifest, ManifestFile file, Path path) {
    }

    /** Serves every complete model already in the store (after a restart, before any re-import). */
    public void loadStored() throws IOException {
        for (String id : store.storedModelIds()) {
            store.load(id).ifPresent(m -> {
                manifests.put(id, signer.apply(m));
                log.info("serving stored model {} ({} files, merkle root {})", id, m.files().size(), m.merkleRoot());
            });
        }
    }

    /** Imports a model directory or GGUF file as it is; see {@link #importModel(Path, String, WeightQuantization)}. */
    public Manifest importModel(Path sourceDir, String modelId) throws IOException {
        return importModel(sourceDir, modelId, null);
    }

    /**
     * Imports a Hugging Face model directory (its matrices quantized as {@code quantization} says, null: as they are)
     * or a GGUF file; the model id defaults to {@link #defaultModelId}. When the store already holds an import of the
     * same unchanged source, that one is served as it is; another source under a stored id replaces it (the start-up
     * imports: the operator's configuration, read before anything is served).
     */
    public Manifest importModel(Path sourceDir, String modelId, WeightQuantization quantization) throws IOException {
        return importModel(sourceDir, modelId, quantization, true);
    }

    /**
     * As {@link #importModel(Path, String, WeightQuantization)}, but a stored id keeps its weights: an import of
     * another source under it is refused ({@link ModelIdTakenException}) and changes nothing (an import asked over the
     * API, while the cluster may serve the id).
     */
    public Manifest importNew(Path sourceDir, String modelId, WeightQuantization quantization) throws IOException {
        return importModel(sourceDir, modelId, quantization, false);
    }

    private Manifest importModel(Path sourceDir, String modelId, WeightQuantization quantization, boolean replace)
            throws IOException {
        Path source = sourceDir.toAbsolutePath().normalize();
        String id = modelId == null || modelId.isBlank() ? defaultModelId(source, quantization) : modelId;
        if (!ModelStore.isValidModelId(id)) {
            throw ModelImporter.invalid(modelId == null || modelId.isBlank() ? "path" : "model_id",
                    "'" + id + "' is not a valid model id (letters, digits, '.', '_', '-')");
        }
        if (store.isReserved(id)) {
            throw ModelImporter.invalid(modelId == null || modelId.isBlank() ? "path" : "model_id",
                    "'" + id + "' is reserved: the registry keeps other data (its publisher key) under that name");
        }
        synchronized (importLock) {
            String fingerprint = ModelImporter.fingerprint(source, quantization);
            Optional<Manifest> current = store.loadIfCurrent(id, fingerprint);
            if (current.isPresent()) {
                Manifest signed = signer.apply(current.get());
                manifests.put(id, signed);
                log.info("model {} is unchanged since its import; serving the stored shards", id);
                return signed;
            }
            Optional<Manifest> stored = replace ? Optional.empty() : store.load(id);
            if (stored.isPresent()) {
                throw new ModelIdTakenException(id, modelId == null || modelId.isBlank() ? "path" : "model_id",
                        stored.get().merkleRoot());
            }
            long started = System.nanoTime();
            Path staging = store.newStagingDir(id);
            try {
                Manifest m = signer.apply(importer.importModel(id, source, staging, quantization));
                store.commit(staging, m, fingerprint);
                manifests.put(id, m);
                failures.remove(id);
                log.info("imported {} from {}: {} files, {} bytes, {} parameters, merkle root {} in {} ms", id, source,
                        m.files().size(), m.totalBytes(), m.parameterCount(), m.merkleRoot(),
                        (System.nanoTime() - started) / 1_000_000);
                return m;
            } catch (IOException | RuntimeException | Error e) {
                failures.put(id, new ImportFailure(id, source.toString(), cause(e), System.currentTimeMillis()));
                throw e;
            } finally {
                ModelStore.deleteRecursively(staging);
            }
        }
    }

    /** Why an import failed, in words an operator can act on. */
    private static String cause(Throwable e) {
        if (e instanceof OutOfMemoryError) {
            return "the registry ran out of memory (" + e.getMessage() + ")";
        }
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof IOException && message.contains("No space left on device")) {
            return "the registry's disk is full (" + message + ")";
        }
        return message;
    }

    /** Imports that failed and have not succeeded since. */
    public List<ImportFailure> failures() {
        return failures.values().stream().sorted(Comparator.comparing(ImportFailure::modelId)).toList();
    }

    /**
     * The id a source is served as unless told otherwise: a directory's name, with the quantization after a dash
     * ({@code demo-q4}: each format of a model is a model of its own), or a GGUF file's name without {@code .gguf}.
     */
    public static String defaultModelId(Path source, WeightQuantization quantization) {
        return io.butterfly.common.manifest.ModelIds.imported(source, quantization == null ? null : quantization.id());
    }

    public List<Manifest> list() {
        return manifests.values().stream().sorted(Comparator.comparing(Manifest::modelId)).toList();
    }

    public Optional<Manifest> find(String modelId) {
        return modelId == null ? Optional.empty() : Optional.ofNullable(manifests.get(modelId));
    }

    /**
     * The model's manifest. A model whose import failed (and none succeeded before) is refused as FAILED_PRECONDITION
     * with the cause, so that a coordinator waiting for it stops waiting and says why; any other is NOT_FOUND.
     */
    public Manifest get(String modelId) {
        return find(modelId).orElseThrow(() -> {
            ImportFailure failed = modelId == null ? null : failures.get(modelId);
            if (failed != null) {
                return new ButterflyException(ErrorCode.INVALID_MANIFEST, ErrorKind.FAILED_PRECONDITION,
                        "the import of model '" + modelId + "' from " + failed.source() + " failed: " + failed.cause(),
                        Map.of("model_id", modelId, "import_error", failed.cause()), null);
            }
            return new ButterflyException(ErrorCode.MANIFEST_NOT_FOUND, ErrorKind.NOT_FOUND,
                    "no model '" + modelId + "' in the registry", Map.of("model_id", String.valueOf(modelId)), null);
        });
    }

    /** Opens a stored file for serving, with the block index of the same import (see {@link ModelStore#open}). */
    public ModelStore.OpenFile open(StoredFile stored) throws IOException {
        return store.open(stored.manifest(), stored.path());
    }

    public StoredFile file(String modelId, String fileName) {
        Manifest m = get(modelId);
        ManifestFile f = m.file(fileName).orElseThrow(() -> new ButterflyException(ErrorCode.WEIGHT_FILE_NOT_FOUND,
                ErrorKind.NOT_FOUND, "model '" + modelId + "' has no file '" + fileName + "'",
                Map.of("model_id", modelId, "file", String.valueOf(fileName)), null));
        return new StoredFile(m, f, store.file(modelId, f.name()));
    }
}
