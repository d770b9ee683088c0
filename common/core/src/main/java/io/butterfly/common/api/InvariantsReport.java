package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code GET /api/v1/invariants}: when the invariants were last checked, and the violations seen in
 * consecutive checks.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record InvariantsReport(String checkedAt, boolean holds, List<Violation> violations) {

    /** @param checks the consecutive checks that found it */
    public record Violation(String invariant, String message, String since, int checks) {
    }
}
