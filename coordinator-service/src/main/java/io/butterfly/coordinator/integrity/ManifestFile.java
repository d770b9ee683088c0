package io.butterfly.coordinator.integrity;

/**
 * One manifest entry as cross-validation needs it.
 *
 * @param kind       CONFIG, TOKENIZER, EMBEDDING, LAYER or HEAD
 * @param layerStart first layer of a LAYER file (inclusive)
 * @param layerEnd   last layer of a LAYER file (exclusive)
 */
public record ManifestFile(String name, String sha256, String kind, int layerStart, int layerEnd) {

    /** Whether a stage holding {@code [start, end)} (with embedding/head) must have loaded this file. */
    boolean neededBy(int start, int end, boolean embedding, boolean head) {
        return switch (kind) {
            case "CONFIG" -> true;
            case "EMBEDDING" -> embedding;
            case "HEAD" -> head;
            case "LAYER" -> layerStart < end && layerEnd > start;
            default -> false;
        };
    }
}
