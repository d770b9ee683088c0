package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.SystemStatus;
import io.butterfly.coordinator.cluster.BootstrapChecks;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.WeightValidation;
import java.time.Instant;

/** The feasibility check and the weights' cross-validation as the state endpoints answer them. */
final class IntegrityView {

    private IntegrityView() {
    }

    static SystemStatus.Feasibility feasibility(BootstrapChecks checks) {
        Feasibility f = checks.feasibility();
        return f == null ? null : new SystemStatus.Feasibility(f.planner(), f.feasible(),
                f.feasible() ? null : "InsufficientResources", f.requiredBytes(), f.availableBytes(), f.reason(),
                Instant.ofEpochMilli(f.atMs()).toString());
    }

    static SystemStatus.WeightValidation validation(BootstrapChecks checks) {
        WeightValidation v = checks.validation();
        return v == null ? null : new SystemStatus.WeightValidation(v.epoch(), v.status().name(), v.merkleRoot(),
                v.partitionRoot(), v.validatedNodes(), v.failedNodes(), v.problems(),
                Instant.ofEpochMilli(v.atMs()).toString());
    }
}
