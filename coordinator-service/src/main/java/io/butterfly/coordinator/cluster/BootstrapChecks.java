package io.butterfly.coordinator.cluster;

/**
 * What the coordinator established about the model before serving it: whether the cluster can hold
 * it (docs/initialization-and-bootstrap.md §5.1) and whether the weights the workers loaded are the
 * manifest's (docs/initialization-and-bootstrap.md §4.5). Either is null until it was done.
 */
public record BootstrapChecks(Feasibility feasibility, WeightValidation validation) {

    public static final BootstrapChecks NONE = new BootstrapChecks(null, null);

    BootstrapChecks with(Feasibility next) {
        return new BootstrapChecks(next, validation);
    }

    BootstrapChecks with(WeightValidation next) {
        return new BootstrapChecks(feasibility, next);
    }

    BootstrapChecks withoutValidation() {
        return new BootstrapChecks(feasibility, null);
    }

    /** Whether the weights of assignment {@code epoch} were cross-validated successfully. */
    public boolean weightsValidFor(long epoch) {
        return validation != null && validation.epoch() == epoch && validation.status() == WeightValidation.Status.VALID;
    }
}
