package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.cluster.CheckpointRecord;
import io.butterfly.coordinator.control.ControlLog;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** Control-plane checkpoints from the replicated log (docs/state-machines.md §7.1), newest last; any replica answers. */
@RestController
@RequestMapping("/api/v1")
public class CheckpointsController {

    private final ControlLog control;

    public CheckpointsController(ControlLog control) {
        this.control = control;
    }

    @GetMapping("/checkpoints")
    public Map<String, Object> checkpoints() {
        List<Map<String, Object>> out = control.state().checkpoints().stream().map(CheckpointsController::view).toList();
        return Map.of("checkpoints", out);
    }

    private static Map<String, Object> view(CheckpointRecord c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", c.id());
        m.put("epoch", c.epoch());
        m.put("merkle_root", c.merkleRoot());
        m.put("log_index", c.logIndex());
        m.put("created_at", Instant.ofEpochMilli(c.atMs()).toString());
        m.put("completed_tasks", c.completedTasks());
        return m;
    }
}
