package io.butterfly.coordinator.control;

import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Component;

/** Last heartbeat per node. Liveness is observed, not decided, so it stays out of the control log. */
@Component
public class Liveness {

    private final Map<String, Instant> lastHeartbeat = new ConcurrentHashMap<>();

    public void heartbeat(String nodeId, Instant at) {
        lastHeartbeat.put(nodeId, at);
    }

    public Instant lastHeartbeat(String nodeId) {
        return lastHeartbeat.get(nodeId);
    }
}
