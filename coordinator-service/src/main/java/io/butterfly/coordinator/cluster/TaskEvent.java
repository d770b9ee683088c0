package io.butterfly.coordinator.cluster;

import java.util.List;
import java.util.Objects;

/**
 * One event of an inference task as the replica running it saw it (docs/state-machines.md §2.3). Events are
 * recorded in batches ({@link ClusterCommand.TasksRecorded}); {@code atMs} is when the event happened on its replica.
 * Apart from {@link Started} and {@link Failed}, an event applies only when the replica that records it owns the task
 * (the one that started or last adopted it, in the same start of its process): a replica that lost a task to another
 * cannot move it any more.
 */
public sealed interface TaskEvent {

    String taskId();

    long atMs();

    /**
     * The task entered the pipeline; the replica recording the batch owns it.
     *
     * @param request what was asked (null in events written before requests were recorded)
     */
    record Started(String taskId, int promptTokens, TaskRequest request, long atMs) implements TaskEvent {
        public Started {
            Objects.requireNonNull(taskId, "taskId");
        }

        /** A start without its request (as written before requests were recorded). */
        public Started(String taskId, int promptTokens, long atMs) {
            this(taskId, promptTokens, null, atMs);
        }
    }

    /**
     * Tokens generated since the task's last progress, from token {@code fromIndex} on (0 = the first generated): a
     * replica records them a flush interval or so after choosing them, never one entry per token.
     */
    record Progressed(String taskId, int fromIndex, List<Token> tokens, long atMs) implements TaskEvent {
        public Progressed {
            Objects.requireNonNull(taskId, "taskId");
            if (fromIndex < 0) {
                throw new IllegalArgumentException("fromIndex must not be negative, got " + fromIndex);
            }
            tokens = List.copyOf(tokens);
        }
    }

    /**
     * One generated token: its id, its log-probability and, when the request asked for them, the step's likeliest
     * tokens.
     */
    record Token(long id, double logprob, List<Alternative> top) {
        public Token {
            top = top == null ? List.of() : List.copyOf(top);
        }
    }

    /** One of a step's likeliest tokens and its log-probability. */
    record Alternative(long tokenId, double logprob) {
    }

    /**
     * The task stopped generating without ending: a stage it ran through failed (it resumes once the pipeline is
     * back), or its streaming client went away (another request may resume it, see {@link Adopted}).
     */
    record Paused(String taskId, String reason, long atMs) implements TaskEvent {
        public Paused {
            Objects.requireNonNull(taskId, "taskId");
        }
    }

    /** A paused task generates again (its history is being replayed into the stages). */
    record Resumed(String taskId, long atMs) implements TaskEvent {
        public Resumed {
            Objects.requireNonNull(taskId, "taskId");
        }
    }

    /**
     * The recording replica takes the task over from its owner {@code fromOwner} (the process that started at
     * {@code fromOwnerStartedAtMs}): a client reconnected there, or repeated the request, after losing its replica.
     * Applies only while that is still the owner, so of two replicas taking the same task over, the first wins.
     */
    record Adopted(String taskId, String fromOwner, long fromOwnerStartedAtMs, long atMs) implements TaskEvent {
        public Adopted {
            Objects.requireNonNull(taskId, "taskId");
            Objects.requireNonNull(fromOwner, "fromOwner");
        }
    }

    /** The task's result: the generated token ids themselves. */
    record Finished(String taskId, List<Long> tokenIds, String finishReason, long atMs) implements TaskEvent {
        public Finished {
            Objects.requireNonNull(taskId, "taskId");
            tokenIds = List.copyOf(tokenIds);
        }
    }

    /**
     * The task failed. {@code owner} and {@code ownerStartedAtMs} name the owner the recorder failed it as (its own
     * task, or one whose runner is gone): the event applies only while that is still the owner. A null owner (events
     * written before ownership could move) applies to any owner.
     */
    record Failed(String taskId, String error, String owner, long ownerStartedAtMs, long atMs) implements TaskEvent {
        public Failed {
            Objects.requireNonNull(taskId, "taskId");
        }

        /** A failure of whoever owns the task (as written before ownership could move). */
        public Failed(String taskId, String error, long atMs) {
            this(taskId, error, null, 0, atMs);
        }
    }
}
