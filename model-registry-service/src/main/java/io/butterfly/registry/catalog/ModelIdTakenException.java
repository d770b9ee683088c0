package io.butterfly.registry.catalog;

/**
 * An import under a model id the registry already serves other weights under: a model id names one set of weights
 * for as long as it is stored (coordinators pin its Merkle root, and a worker loading a re-planned stage would
 * fetch the other weights and fail cross-validation). Nothing is changed; import under a new id.
 */
public final class ModelIdTakenException extends RuntimeException {

    private final String modelId;
    private final String field;

    ModelIdTakenException(String modelId, String field, String merkleRoot) {
        super("model '" + modelId + "' is already imported (merkle root " + merkleRoot + ") from another source: a model id"
                + " is immutable once imported, import the new weights under a new id");
        this.modelId = modelId;
        this.field = field;
    }

    public String modelId() {
        return modelId;
    }

    /** The request's field the id came from: {@code model_id}, or {@code path} when it was the default. */
    public String field() {
        return field;
    }
}
