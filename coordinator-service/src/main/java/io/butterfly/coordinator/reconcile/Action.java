package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.List;

/**
 * One thing the leader's control plane does next, as {@link Reconciler} decides it and {@link ControlLoop} carries it
 * out. Every action is idempotent (doing it twice does no harm) and named by a {@link #key()}: one attempt of a key
 * runs at a time, and the attempts of a key are what its retries and backoff are judged on.
 */
public sealed interface Action {

    String key();

    /** Commits commands to the control log, in order. */
    record Commit(String key, List<ClusterCommand> commands) implements Action {
        public Commit {
            commands = List.copyOf(commands);
        }

        static Commit of(String key, ClusterCommand... commands) {
            return new Commit(key, List.of(commands));
        }
    }

    /** Fetches and verifies the served model's manifest, config and tokenizer from the registry. */
    record FetchModel() implements Action {
        @Override
        public String key() {
            return "fetch-model";
        }
    }

    /** Sends a worker its assignment (to load it, or to hear it again with this leader's term). */
    record Assign(NodeInfo node, Assignment assignment, String why) implements Action {
        @Override
        public String key() {
            return assignKey(node.nodeId(), assignment.epoch(), assignment.term());
        }
    }

    /** Cross-validates the loaded weights of an epoch and commits the verdict (docs/bootstrap-protocol.md §6.5). */
    record Validate(long epoch) implements Action {
        @Override
        public String key() {
            return "validate/" + epoch;
        }
    }

    /** Tells a drained worker, whose stage is planned away, to leave the cluster. */
    record Dismiss(NodeInfo node, long epoch, long term) implements Action {
        @Override
        public String key() {
            return "dismiss/" + node.nodeId();
        }
    }

    static String assignKey(String nodeId, long epoch, long term) {
        return "assign/" + nodeId + "/" + epoch + "/" + term;
    }
}
