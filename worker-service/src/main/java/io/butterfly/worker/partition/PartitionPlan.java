package io.butterfly.worker.partition;

/**
 * What a worker does with an assignment it accepted (fenced and valid), decided from the assignment (desired) and what
 * it holds (actual) alone: the pure half of its partition lifecycle, as the coordinator's {@code Reconciler} is of the
 * leader's. {@link PartitionManager} carries the step out (fetch, verify, load, warm, report; release what it held).
 * Level-triggered: the same assignment said again, by a retry or a new leader, is decided against what is held then,
 * so it never starts a second load of what is loading or loaded.
 */
final class PartitionPlan {

    private PartitionPlan() {
    }

    /**
     * What the worker holds when an assignment arrives.
     *
     * @param current      the assignment it last took (null: none)
     * @param phase        where that assignment's load is
     * @param epoch        the epoch its partition serves in
     * @param engineLoaded its engine holds a loaded stage
     */
    record Held(Assignment current, LoadPhase phase, long epoch, boolean engineLoaded) {
    }

    /** The step an assignment calls for. */
    sealed interface Step permits HoldOn, Keep, Load {
    }

    /**
     * The loaded stage serves on in the assignment's newer epoch without loading anything (a re-plan moved other
     * stages).
     *
     * @param keepCaches the stage was held without a break since the epoch it was loaded or last kept in, so its
     *                   sequences' KV caches are still theirs; otherwise they ran elsewhere meanwhile and are dropped
     */
    record HoldOn(boolean keepCaches) implements Step {
    }

    /**
     * The same partition said again (a retry, a new leader re-announcing it): nothing is loaded again; it reports to the
     * coordinator the assignment names from now on.
     *
     * @param reportReady it is READY: said again, as the coordinator asks because its state lacks it
     */
    record Keep(boolean reportReady) implements Step {
    }

    /**
     * Anything else: fetch, verify, load and warm the assigned partition, and report each phase.
     *
     * @param releases the engine's stage held until now is released first (its weights and KV caches freed)
     */
    record Load(boolean releases) implements Step {
    }

    static Step next(Assignment desired, Held held) {
        if (holdsOn(desired, held)) {
            return new HoldOn(held.epoch() >= desired.keptSinceEpoch());
        }
        if (desired.samePartitionAs(held.current()) && held.phase() != LoadPhase.FAILED) {
            return new Keep(held.phase() == LoadPhase.READY);
        }
        return new Load(held.engineLoaded());
    }

    /** The stage it holds READY, in a newer epoch, and the coordinator says since when it has held it. */
    private static boolean holdsOn(Assignment desired, Held held) {
        return desired.keptSinceEpoch() > 0 && desired.epoch() > held.epoch() && desired.sameStageAs(held.current())
                && held.phase() == LoadPhase.READY && held.engineLoaded();
    }
}
