package io.butterfly.coordinator.cluster;

import java.util.List;

/**
 * Result of the cross-validation of loaded weights (docs/bootstrap-protocol.md §6.5 ValidationResult).
 *
 * @param epoch          assignment the workers reported for
 * @param status         VALID, INVALID (some checksum disagrees) or INCOMPLETE (some node did not answer)
 * @param merkleRoot     Merkle root rebuilt from the checksums the workers computed over what they loaded,
 *                       in manifest order (equals the manifest's root when VALID)
 * @param partitionRoot  root of the spec's tree over (node, layer range, weight hash), one leaf per stage
 * @param validatedNodes nodes whose report matched the manifest
 * @param failedNodes    nodes whose report disagreed or is missing
 * @param problems       what disagreed, naming node and file
 */
public record WeightValidation(long epoch, Status status, String merkleRoot, String partitionRoot,
                               List<String> validatedNodes, List<String> failedNodes, List<String> problems,
                               long atMs) {

    public enum Status { VALID, INVALID, INCOMPLETE }

    public WeightValidation {
        validatedNodes = List.copyOf(validatedNodes);
        failedNodes = List.copyOf(failedNodes);
        problems = List.copyOf(problems);
    }
}
