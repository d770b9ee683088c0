package io.butterfly.worker.engine;

import java.util.List;
import java.util.Objects;

/**
 * How a stage's routed experts are spread over workers (docs/sharding.md): in expert groups, each a contiguous range of
 * expert ids on one worker, listed in the order of their ids, which is also the order of the reduction tree that merges
 * their sums. Group 0 is the stage's own worker (attention, router, shared expert and experts {@code [0, end)}); the
 * others are workers holding only their experts, for every sparse layer of the stage.
 *
 * @param groups      the stage's groups, covering its experts once, in order
 * @param self        which group this partition is
 * @param expertCount the model's experts per sparse layer
 */
public record ExpertPlacement(List<Group> groups, int self, int expertCount) {

    /**
     * @param nodeId the worker holding the group
     * @param host   where to reach it (its gRPC address)
     * @param port   its gRPC port
     * @param first  its first expert
     * @param end    one past its last expert
     */
    public record Group(String nodeId, String host, int port, int first, int end) {
        public Group {
            Objects.requireNonNull(nodeId, "nodeId");
            if (first < 0 || end <= first) {
                throw new IllegalArgumentException("expert group " + nodeId + " has no experts: [" + first + ", " + end + ")");
            }
        }

        /** Whether the group holds expert {@code e}. */
        public boolean holds(long e) {
            return e >= first && e < end;
        }
    }

    public ExpertPlacement {
        groups = List.copyOf(groups);
        if (groups.isEmpty() || self < 0 || self >= groups.size()) {
            throw new IllegalArgumentException("expert placement needs groups and this partition's among them, got "
                    + groups.size() + " groups and " + self);
        }
        int next = 0;
        for (Group g : groups) {
            if (g.first() != next) {
                throw new IllegalArgumentException("expert group " + g.nodeId() + " starts at expert " + g.first()
                        + ", expected " + next + ": the groups must cover the experts in order");
            }
            next = g.end();
        }
        if (next != expertCount) {
            throw new IllegalArgumentException("the expert groups end at " + next + ", the model has " + expertCount);
        }
    }

    /** This partition's group. */
    public Group own() {
        return groups.get(self);
    }

    /** Whether this partition holds only its experts (a group of another worker's stage). */
    public boolean expertsOnly() {
        return self > 0;
    }
}
