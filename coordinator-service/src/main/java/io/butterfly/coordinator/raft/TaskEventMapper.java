package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.proto.coordinator.v1.TaskAdoptedEvent;
import io.butterfly.proto.coordinator.v1.TaskFailedEvent;
import io.butterfly.proto.coordinator.v1.TaskFinishedEvent;
import io.butterfly.proto.coordinator.v1.TaskPausedEvent;
import io.butterfly.proto.coordinator.v1.TaskProgressedEvent;
import io.butterfly.proto.coordinator.v1.TaskResumedEvent;
import io.butterfly.proto.coordinator.v1.TaskStartedEvent;
import io.butterfly.proto.coordinator.v1.TokenAlternatives;
import java.util.ArrayList;
import java.util.List;

/** Task events ↔ their protobuf form in a {@code TasksRecordedCommand}. */
final class TaskEventMapper {

    private TaskEventMapper() {
    }

    static io.butterfly.proto.coordinator.v1.TaskEvent toProto(TaskEvent e) {
        io.butterfly.proto.coordinator.v1.TaskEvent.Builder b = io.butterfly.proto.coordinator.v1.TaskEvent.newBuilder()
                .setTaskId(e.taskId()).setAtMs(e.atMs());
        if (e instanceof TaskEvent.Started s) {
            TaskStartedEvent.Builder p = TaskStartedEvent.newBuilder().setPromptTokens(s.promptTokens());
            if (s.request() != null) {
                p.setRequest(toProto(s.request()));
            }
            b.setStarted(p);
        } else if (e instanceof TaskEvent.Progressed p) {
            TaskProgressedEvent.Builder pb = TaskProgressedEvent.newBuilder().setFromIndex(p.fromIndex());
            for (TaskEvent.Token t : p.tokens()) {
                pb.addTokenIds(t.id()).addLogprobs(t.logprob());
                TokenAlternatives.Builder top = TokenAlternatives.newBuilder();
                t.top().forEach(a -> top.addTokenIds(a.tokenId()).addLogprobs(a.logprob()));
                pb.addTop(top);
            }
            b.setProgressed(pb);
        } else if (e instanceof TaskEvent.Paused p) {
            TaskPausedEvent.Builder pb = TaskPausedEvent.newBuilder();
            if (p.reason() != null) {
                pb.setReason(p.reason());
            }
            b.setPaused(pb);
        } else if (e instanceof TaskEvent.Resumed) {
            b.setResumed(TaskResumedEvent.getDefaultInstance());
        } else if (e instanceof TaskEvent.Adopted a) {
            b.setAdopted(TaskAdoptedEvent.newBuilder().setFromOwner(a.fromOwner())
                    .setFromOwnerStartedAtMs(a.fromOwnerStartedAtMs()));
        } else if (e instanceof TaskEvent.Finished f) {
            TaskFinishedEvent.Builder p = TaskFinishedEvent.newBuilder().addAllTokenIds(f.tokenIds());
            if (f.finishReason() != null) {
                p.setFinishReason(f.finishReason());
            }
            b.setFinished(p);
        } else {
            TaskEvent.Failed f = (TaskEvent.Failed) e;
            TaskFailedEvent.Builder p = TaskFailedEvent.newBuilder();
            if (f.error() != null) {
                p.setError(f.error());
            }
            if (f.owner() != null) {
                p.setOwner(f.owner()).setOwnerStartedAtMs(f.ownerStartedAtMs());
            }
            b.setFailed(p);
        }
        return b.build();
    }

    static TaskEvent fromProto(io.butterfly.proto.coordinator.v1.TaskEvent p) {
        String id = p.getTaskId();
        long at = p.getAtMs();
        switch (p.getEventCase()) {
            case STARTED:
                return new TaskEvent.Started(id, p.getStarted().getPromptTokens(),
                        p.getStarted().hasRequest() ? fromProto(p.getStarted().getRequest()) : null, at);
            case PROGRESSED:
                return new TaskEvent.Progressed(id, p.getProgressed().getFromIndex(), tokens(id, p.getProgressed()), at);
            case PAUSED:
                return new TaskEvent.Paused(id, p.getPaused().hasReason() ? p.getPaused().getReason() : null, at);
            case RESUMED:
                return new TaskEvent.Resumed(id, at);
            case ADOPTED:
                return new TaskEvent.Adopted(id, p.getAdopted().getFromOwner(),
                        p.getAdopted().getFromOwnerStartedAtMs(), at);
            case FINISHED: {
                TaskFinishedEvent f = p.getFinished();
                return new TaskEvent.Finished(id, f.getTokenIdsList(), f.hasFinishReason() ? f.getFinishReason() : null,
                        at);
            }
            case FAILED: {
                TaskFailedEvent f = p.getFailed();
                return new TaskEvent.Failed(id, f.hasError() ? f.getError() : null, f.hasOwner() ? f.getOwner() : null,
                        f.getOwnerStartedAtMs(), at);
            }
            case EVENT_NOT_SET:
            default:
                throw new IllegalArgumentException("task event of " + id + " has no known kind: " + p.getEventCase());
        }
    }

    private static List<TaskEvent.Token> tokens(String taskId, TaskProgressedEvent p) {
        int n = p.getTokenIdsCount();
        if (p.getLogprobsCount() != n || (p.getTopCount() != n && p.getTopCount() != 0)) {
            throw new IllegalArgumentException("progress of task " + taskId + " has " + n + " token ids, "
                    + p.getLogprobsCount() + " logprobs and " + p.getTopCount() + " top lists");
        }
        List<TaskEvent.Token> tokens = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            List<TaskEvent.Alternative> top = new ArrayList<>();
            if (p.getTopCount() > 0) {
                TokenAlternatives a = p.getTop(i);
                if (a.getTokenIdsCount() != a.getLogprobsCount()) {
                    throw new IllegalArgumentException("progress of task " + taskId + ": token " + i + " has "
                            + a.getTokenIdsCount() + " alternative ids and " + a.getLogprobsCount() + " logprobs");
                }
                for (int k = 0; k < a.getTokenIdsCount(); k++) {
                    top.add(new TaskEvent.Alternative(a.getTokenIds(k), a.getLogprobs(k)));
                }
            }
            tokens.add(new TaskEvent.Token(p.getTokenIds(i), p.getLogprobs(i), top));
        }
        return tokens;
    }

    private static io.butterfly.proto.coordinator.v1.TaskRequest toProto(TaskRequest r) {
        io.butterfly.proto.coordinator.v1.TaskRequest.Builder b = io.butterfly.proto.coordinator.v1.TaskRequest.newBuilder()
                .addAllPromptTokenIds(r.promptTokenIds()).setPromptSha256(r.promptSha256()).setMaxTokens(r.maxTokens())
                .setTemperature(r.temperature()).setTopP(r.topP()).setTopK(r.topK()).setSeed(r.seed())
                .setLogprobs(r.logprobs()).setIgnoreEos(r.ignoreEos()).addAllStop(r.stop());
        if (r.idempotencyKey() != null) {
            b.setIdempotencyKey(r.idempotencyKey());
        }
        if (r.ownerKey() != null) {
            b.setOwnerKey(r.ownerKey());
        }
        if (r.responseFormat() != null) {
            b.setResponseFormat(r.responseFormat());
        }
        return b.build();
    }

    private static TaskRequest fromProto(io.butterfly.proto.coordinator.v1.TaskRequest p) {
        return new TaskRequest(p.getPromptTokenIdsList(), p.getPromptSha256(), p.getMaxTokens(), p.getTemperature(),
                p.getTopP(), p.getTopK(), p.getSeed(), p.getLogprobs(), p.getIgnoreEos(), p.getStopList(),
                p.hasIdempotencyKey() ? p.getIdempotencyKey() : null, p.hasOwnerKey() ? p.getOwnerKey() : null,
                p.hasResponseFormat() ? p.getResponseFormat() : null);
    }
}
