package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.TaskStatus;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.UnknownTaskException;
import java.time.Instant;
import java.util.List;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The tasks of the replicated state, as each replica holds them: with API keys set, a key sees only the tasks it
 * started (their tokens are its client's), an admin key every task, and another key's task is not found (404, as
 * a task that does not exist). Without keys, every task.
 */
@RestController
@RequestMapping("/api/v1/tasks")
public class TasksController {

    private final ControlLog control;

    public TasksController(ControlLog control) {
        this.control = control;
    }

    @GetMapping
    public List<TaskStatus> tasks() {
        Requester requester = Requesters.current();
        return control.state().tasks().values().stream().filter(requester::maySee).map(TasksController::task).toList();
    }

    @GetMapping("/{id}/state")
    public TaskStatus taskState(@PathVariable("id") String id) {
        TaskRecord t = control.state().tasks().get(id);
        if (t == null || !Requesters.current().maySee(t)) {
            throw new UnknownTaskException(null, "'" + id + "'");
        }
        return task(t);
    }

    static TaskStatus task(TaskRecord t) {
        return new TaskStatus(t.taskId(), t.state().name(), t.owner().isEmpty() ? null : t.owner(), t.promptTokens(),
                t.generatedTokens(), t.finishReason(), t.tokenIds(), Instant.ofEpochMilli(t.createdAtMs()).toString(),
                Instant.ofEpochMilli(t.updatedAtMs()).toString(), t.error(),
                t.paused() ? Instant.ofEpochMilli(t.pausedAtMs()).toString() : null, t.pauseReason(),
                t.request() == null ? null : t.request().clientIdempotencyKey());
    }
}
