package io.butterfly.coordinator.api.rest;

import io.butterfly.common.web.audit.AuditLog;
import io.butterfly.common.api.DrainAccepted;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.reconcile.Drains;
import java.net.URI;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /api/v1/nodes/{id}/drain}: takes a worker out of the cluster on purpose. Answered once the drain is
 * committed (202): the leader then plans the node's stage away, and the node leaves once that plan serves READY;
 * {@code GET /api/v1/nodes/{id}/state} follows it (404 once it has left).
 */
@RestController
@RequestMapping("/api/v1/nodes")
public class DrainController {

    private final Drains drains;

    public DrainController(Drains drains) {
        this.drains = drains;
    }

    @PostMapping("/{id}/drain")
    public ResponseEntity<DrainAccepted> drain(@PathVariable("id") String id) {
        ClusterState s;
        try {
            s = drains.request(id);
        } catch (RuntimeException refused) {
            AuditLog.action("drain", id, "refused", refused.getMessage());
            throw refused;
        }
        AuditLog.action("drain", id, "accepted", "epoch " + s.epoch());
        boolean holdsStage = s.pipeline().contains(id);
        DrainAccepted out = new DrainAccepted(id, true, holdsStage, s.epoch(), s.system().name(), holdsStage
                ? "its stage is planned away; it leaves once the new plan serves READY"
                : "it holds no stage; it leaves once the cluster serves READY");
        return ResponseEntity.accepted().location(URI.create("/api/v1/nodes/" + id + "/state")).body(out);
    }
}
