package io.butterfly.registry.api.rest;

import io.butterfly.common.web.audit.AuditLog;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.registry.catalog.ImportRoots;
import io.butterfly.registry.catalog.ModelCatalog;
import java.io.IOException;
import java.net.URI;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code /api/v1/models}: list, read and import models. */
@RestController
@RequestMapping("/api/v1/models")
public class ModelsController {

    private final ModelCatalog catalog;
    private final ImportRoots roots;

    public ModelsController(ModelCatalog catalog, ImportRoots roots) {
        this.catalog = catalog;
        this.roots = roots;
    }

    /**
     * Body of an import: a Hugging Face model directory or a GGUF file under one of the registry's import roots, a
     * model id not yet imported (or the same unchanged source again), and how to
     * quantize a directory's matrices ({@code q8}, {@code q4}, {@code q4_k}; absent: as they are).
     */
    public record ImportRequest(@JsonProperty("path") String path, @JsonProperty("model_id") String modelId,
                                @JsonProperty("quantize") String quantize) {
    }

    @GetMapping
    public List<Manifest> list() {
        return catalog.list();
    }

    @GetMapping("/{id}")
    public Manifest get(@PathVariable("id") String id) {
        return catalog.get(id);
    }

    @PostMapping
    public ResponseEntity<Manifest> importModel(@RequestBody(required = false) ImportRequest request) throws IOException {
        if (request == null || request.path() == null || request.path().isBlank()) {
            throw new BadRequestException("path", "path is required: the model directory to import");
        }
        try {
            if (!Path.of(request.path()).isAbsolute()) {
                throw new BadRequestException("path", "path '" + request.path() + "' must be absolute");
            }
        } catch (InvalidPathException e) {
            throw new BadRequestException("path", "path '" + request.path() + "' is not a valid path");
        }
        Path dir;
        try {
            dir = roots.resolve(request.path()); // nothing outside the import roots is looked at
        } catch (ImportRoots.Refused outside) {
            AuditLog.action("import", request.path(), "refused", outside.getMessage());
            throw outside;
        }
        WeightQuantization quantization = null;
        if (request.quantize() != null && !request.quantize().isBlank()) {
            quantization = WeightQuantization.byId(request.quantize()).orElseThrow(() -> new BadRequestException(
                    "quantize", "quantize '" + request.quantize() + "' is not one of q8, q4, q4_k"));
        }
        Manifest m;
        try {
            m = catalog.importNew(dir, request.modelId(), quantization);
        } catch (IOException | RuntimeException refused) {
            AuditLog.action("import", request.modelId() == null ? dir.toString() : request.modelId(), "refused",
                    refused.getMessage());
            throw refused;
        }
        AuditLog.action("import", m.modelId(), "imported", "merkle root " + m.merkleRoot() + " from " + dir);
        return ResponseEntity.created(URI.create("/api/v1/models/" + m.modelId())).body(m);
    }

    /** A bad field in a request body. */
    static final class BadRequestException extends RuntimeException {
        final String field;

        BadRequestException(String field, String message) {
            super(message);
            this.field = field;
        }

        Map<String, String> context() {
            return Map.of("field", field);
        }
    }
}
