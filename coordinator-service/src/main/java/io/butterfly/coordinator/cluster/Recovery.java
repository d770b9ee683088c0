package io.butterfly.coordinator.cluster;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A recovery (docs/state-machines.md §6.1): from the moment a serving cluster lost a stage (a node FAILED, a load
 * failed) or was re-planned (a drain), until it serves READY again.
 *
 * @param startedAtMs when the loss was committed
 * @param fromEpoch   the epoch that served when it began
 * @param cause       what began it
 * @param lostNodes   the nodes lost or drained while it lasted, in order
 * @param endedAtMs   when the system was READY again (0 while it lasts)
 * @param toEpoch     the epoch that serves since (0 while it lasts)
 */
public record Recovery(long startedAtMs, long fromEpoch, String cause, List<String> lostNodes, long endedAtMs,
                       long toEpoch) {

    public Recovery {
        cause = Objects.requireNonNullElse(cause, "");
        lostNodes = List.copyOf(lostNodes);
    }

    static Recovery began(long atMs, long epoch, String cause, String node) {
        return new Recovery(atMs, epoch, cause, node == null ? List.of() : List.of(node), 0, 0);
    }

    public boolean ongoing() {
        return endedAtMs == 0;
    }

    /** Another node lost while this recovery lasts. */
    Recovery alsoLost(String node) {
        if (node == null || lostNodes.contains(node)) {
            return this;
        }
        List<String> next = new ArrayList<>(lostNodes);
        next.add(node);
        return new Recovery(startedAtMs, fromEpoch, cause, next, endedAtMs, toEpoch);
    }

    Recovery ended(long atMs, long epoch) {
        return new Recovery(startedAtMs, fromEpoch, cause, lostNodes, atMs, epoch);
    }
}
