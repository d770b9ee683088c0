package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.reconcile.Drains;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
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
    public ResponseEntity<Map<String, Object>> drain(@PathVariable("id") String id) {
        ClusterState s = drains.request(id);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node_id", id);
        out.put("draining", true);
        boolean holdsStage = s.pipeline().contains(id);
        out.put("holds_stage", holdsStage);
        out.put("epoch", s.epoch());
        out.put("system_state", s.system().name());
        out.put("message", holdsStage ? "its stage is planned away; it leaves once the new plan serves READY"
                : "it holds no stage; it leaves once the cluster serves READY");
        return ResponseEntity.accepted().location(URI.create("/api/v1/nodes/" + id + "/state")).body(out);
    }
}
