package io.butterfly.coordinator.control;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;

/** Derives the applied transitions of one command and logs them (and rejections) with structured key-values. */
final class TransitionLogging {

    private TransitionLogging() {
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

    static void applied(Logger log, TransitionRecord r) {
        log.atInfo().addKeyValue("machine", r.machine()).addKeyValue("entity_id", r.entityId())
                .addKeyValue("from", r.from()).addKeyValue("to", r.to()).addKeyValue("trigger", r.trigger())
                .addKeyValue("epoch", r.epoch()).addKeyValue("log_index", r.logIndex())
                .log("{} {} {} -> {} on {}", r.machine(), r.entityId(), r.from(), r.to(), r.trigger());
    }

    static void rejected(Logger log, ClusterState state, ClusterCommand command, IllegalTransitionException e) {
        log.atWarn().addKeyValue("machine", "system").addKeyValue("from", state.system().name())
                .addKeyValue("command", command.getClass().getSimpleName()).addKeyValue("epoch", state.epoch())
                .addKeyValue("reason", e.getMessage())
                .log("rejected {} in {}: {}", command.getClass().getSimpleName(), state.system(), e.getMessage());
    }
}
