package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.statemachine.WorkerState;

/**
 * When a node becomes FAILED in the control log, this replica's steps waiting on it are failed at once instead of
 * waiting for a transport timeout: their sequences pause, and resume once the pipeline serves again.
 */
public class FailedStageAborts {

    public FailedStageAborts(ControlLog control, Pipeline pipeline) {
        control.onApplied((before, after, command, index) -> {
            for (NodeRecord n : after.nodes().values()) {
                NodeRecord was = before.nodes().get(n.info().nodeId());
                if (n.state() == WorkerState.FAILED && (was == null || was.state() != WorkerState.FAILED)) {
                    String why = n.health().failedByDetector() || n.health().byzantine() ? n.health().cause() : n.failureMessage();
                    pipeline.abortThrough(n.info().nodeId(), why == null || why.isEmpty() ? "no reason recorded" : why);
                }
            }
        });
    }
}
