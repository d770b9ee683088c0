package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.statemachine.TransitionHistory;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a control log tells about the commands it applies: every replica applies every command, so each one logs
 * (with structured key-values) and keeps the transitions it applied, and logs the commands it refused.
 */
public final class TransitionJournal implements ControlLog.AppliedListener {

    private static final Logger log = LoggerFactory.getLogger(ControlLog.class);

    private final TransitionHistory history = new TransitionHistory(1000);

    @Override
    public void applied(ClusterState before, ClusterState after, ClusterCommand command, long index) {
        for (TransitionRecord r : diff(before, after, command, index, System.currentTimeMillis())) {
            log.atInfo().addKeyValue("machine", r.machine()).addKeyValue("entity_id", r.entityId())
                    .addKeyValue("from", r.from()).addKeyValue("to", r.to()).addKeyValue("trigger", r.trigger())
                    .addKeyValue("epoch", r.epoch()).addKeyValue("log_index", r.logIndex())
                    .log("{} {} {} -> {} on {}", r.machine(), r.entityId(), r.from(), r.to(), r.trigger());
            history.add(r);
        }
    }

    /** Logs a command the reducer refused in {@code state}. */
    public void rejected(ClusterState state, ClusterCommand command, IllegalTransitionException e) {
        log.atWarn().addKeyValue("machine", "system").addKeyValue("from", state.system().name())
                .addKeyValue("command", command.getClass().getSimpleName()).addKeyValue("epoch", state.epoch())
                .addKeyValue("reason", e.getMessage())
                .log("rejected {} in {}: {}", command.getClass().getSimpleName(), state.system(), e.getMessage());
    }

    /** The newest {@code limit} applied transitions, newest first. */
    public List<TransitionRecord> latest(int limit) {
        return history.latest(limit);
    }

    /** The system transition and every node-state change between two consecutive states. */
    static List<TransitionRecord> diff(ClusterState before, ClusterState after, ClusterCommand command, long index,
            long atMs) {
        String trigger = command.getClass().getSimpleName();
        List<TransitionRecord> out = new ArrayList<>();
        if (before.system() != after.system()) {
            out.add(new TransitionRecord("system", "cluster", before.system().name(), after.system().name(), trigger,
                    after.epoch(), index, atMs));
        }
        for (NodeRecord n : after.nodes().values()) {
            NodeRecord old = before.nodes().get(n.info().nodeId());
            String from = old == null ? "INITIALIZED" : old.state().name();
            if (!from.equals(n.state().name())) {
                out.add(new TransitionRecord("worker", n.info().nodeId(), from, n.state().name(), trigger, after.epoch(),
                        index, atMs));
            }
        }
        return out;
    }
}
