package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.control.ControlLog;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Tasks committed one command at a time to the control log (an interim journal). */
public final class ControlLogTaskJournal implements TaskJournal {

    private static final Logger log = LoggerFactory.getLogger(ControlLogTaskJournal.class);

    private final ControlLog control;
    private final String owner;
    private final long ownerStartedAtMs;

    public ControlLogTaskJournal(ControlLog control, String owner, long ownerStartedAtMs) {
        this.control = control;
        this.owner = owner;
        this.ownerStartedAtMs = ownerStartedAtMs;
    }

    @Override
    public void started(String taskId, int promptTokens, long atMs) {
        submit(new ClusterCommand.TaskSubmitted(taskId, promptTokens, owner, ownerStartedAtMs, atMs));
    }

    @Override
    public void finished(String taskId, List<Long> tokenIds, String finishReason, long atMs) {
        submit(new ClusterCommand.TaskFinished(taskId, tokenIds, finishReason, atMs));
    }

    @Override
    public void failed(String taskId, String error, long atMs) {
        submit(new ClusterCommand.TaskFailed(taskId, error, atMs));
    }

    private void submit(ClusterCommand c) {
        try {
            control.submit(c);
        } catch (RuntimeException e) {
            log.warn("task event not recorded: {}", e.toString());
        }
    }
}
