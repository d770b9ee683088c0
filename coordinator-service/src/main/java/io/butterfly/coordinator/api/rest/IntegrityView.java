package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.cluster.BootstrapChecks;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.WeightValidation;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/** JSON views of the feasibility check and the weights' cross-validation for the state endpoints. */
final class IntegrityView {

    private IntegrityView() {
    }

    static Map<String, Object> feasibility(BootstrapChecks checks) {
        Feasibility f = checks.feasibility();
        if (f == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("planner", f.planner());
        m.put("feasible", f.feasible());
        if (!f.feasible()) {
            m.put("error_code", "InsufficientResources");
        }
        m.put("required_bytes", f.requiredBytes());
        m.put("available_bytes", f.availableBytes());
        m.put("reason", f.reason());
        m.put("checked_at", Instant.ofEpochMilli(f.atMs()).toString());
        return m;
    }

    static Map<String, Object> validation(BootstrapChecks checks) {
        WeightValidation v = checks.validation();
        if (v == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("epoch", v.epoch());
        m.put("status", v.status().name());
        m.put("merkle_root", v.merkleRoot());
        m.put("partition_root", v.partitionRoot());
        m.put("validated_nodes", v.validatedNodes());
        m.put("failed_nodes", v.failedNodes());
        m.put("problems", v.problems());
        m.put("validated_at", Instant.ofEpochMilli(v.atMs()).toString());
        return m;
    }
}
