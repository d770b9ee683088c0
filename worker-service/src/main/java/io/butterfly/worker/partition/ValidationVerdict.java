package io.butterfly.worker.partition;

import java.util.List;

/**
 * The coordinator's verdict on a cross-validation (docs/bootstrap-protocol.md §6.5).
 *
 * @param status          VALID, INVALID or INCOMPLETE
 * @param validatedNodes  the nodes whose reports contributed to the root
 * @param failedNodes     the nodes whose reports did not match
 */
public record ValidationVerdict(long epoch, String status, String merkleRoot, List<String> validatedNodes,
                                List<String> failedNodes, List<String> problems) {
}
