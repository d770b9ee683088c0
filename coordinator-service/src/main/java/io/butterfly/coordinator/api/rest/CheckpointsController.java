package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.Checkpoints;
import io.butterfly.coordinator.cluster.CheckpointRecord;
import io.butterfly.coordinator.control.ControlLog;
import java.time.Instant;
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
    public Checkpoints checkpoints() {
        return new Checkpoints(control.state().checkpoints().stream().map(CheckpointsController::view).toList());
    }

    private static Checkpoints.Checkpoint view(CheckpointRecord c) {
        return new Checkpoints.Checkpoint(c.id(), c.epoch(), c.merkleRoot(), c.logIndex(),
                Instant.ofEpochMilli(c.atMs()).toString(), c.completedTasks());
    }
}
