package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.TaskTranscript;
import io.butterfly.common.hash.Xxh64;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.UnknownTaskException;
import io.butterfly.coordinator.inference.engine.Transcript;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

/**
 * A task's transcript (docs/verified-execution.md): what each stage computed for it and the hash chain of its tokens.
 * Who may see it is who may see the task ({@link TasksController}): with API keys set, the key that started it or an
 * admin key; another key's task is 404, as an unknown one. Only the replica that ran the task holds its transcript:
 * another answers 404 naming that replica.
 */
@RestController
public class TranscriptController {

    private final ControlLog control;
    private final InferenceService inference;
    private final String replica;

    public TranscriptController(ControlLog control, InferenceService inference, CoordinatorProperties props) {
        this.control = control;
        this.inference = inference;
        this.replica = props.nodeId();
    }

    @GetMapping("/api/v1/tasks/{id}/transcript")
    public TaskTranscript transcript(@PathVariable("id") String id) {
        TaskRecord t = control.state().tasks().get(id);
        if (t == null || !Requesters.current().maySee(t)) {
            throw new UnknownTaskException(null, "'" + id + "'");
        }
        Transcript.Snapshot s = inference.transcript(id).orElseThrow(() -> new UnknownTaskException(null, "'" + id
                + "' transcript on this replica (" + replica + "): ask the replica that ran it, "
                + (t.owner().isEmpty() ? "which the task does not name" : t.owner())));
        return new TaskTranscript(id, replica, Xxh64.hex(s.genesis()), Xxh64.hex(s.digest()),
                s.links().stream().map(l -> new TaskTranscript.Link(l.end(), Xxh64.hex(l.logitsHash()), l.tokenId(),
                        Xxh64.hex(l.link()))).toList(),
                s.steps().stream().map(st -> new TaskTranscript.Step(st.batch(), st.position(), st.tokens(),
                        Xxh64.hex(st.inputHash()), st.stages().stream().map(g -> new TaskTranscript.Stage(g.nodeId(),
                        g.contract(), Xxh64.hex(g.outputHash()), g.layers().stream().map(l -> new TaskTranscript.Layer(
                        l.layer(), Xxh64.hex(l.outputHash()))).toList())).toList())).toList());
    }
}
