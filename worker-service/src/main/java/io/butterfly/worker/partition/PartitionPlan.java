package io.butterfly.worker.partition;

/**
 * The pure half of a worker's partition lifecycle, as the coordinator's {@code Reconciler} is of the leader's; {@link
 * PartitionManager} is the one runner that carries the steps out. Two decisions, each from desired and actual state
 * alone:
 * <ul>
 *   <li>{@link #next}: what an assignment it accepted (fenced and valid) calls for, against what it holds: hold the
 *       loaded stage on, keep the partition said again, or load. Level-triggered: the same assignment said again, by a
 *       retry or a new leader, is decided against what is held then, so it never starts a second load of what is
 *       loading or loaded.</li>
 *   <li>{@link #nextLoadStep}: how far a load has got, to the next of its steps: release what was held, fetch,
 *       verify, load, warm, publish, report; a load superseded by a newer assignment stops, closing an engine it
 *       loaded and never published.</li>
 * </ul>
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

    /**
     * The first epoch whose steps the stage runs once {@code desired} is taken (docs/scale-out.md): the epoch from
     * which the coordinator says the whole pipeline has been the same, but never before the epoch from which this
     * worker has held the stage with its KV caches ({@code heldStepsFrom} if the caches are kept, else this epoch). A
     * step of an epoch in between was sent to this very stage with these very neighbours, over these caches; one of
     * an earlier epoch may have been meant for another pipeline, and is refused.
     */
    static long stepsFrom(Assignment desired, long heldStepsFrom, boolean cachesKept) {
        long pipelineSince = desired.stepsSinceEpoch() > 0 ? Math.min(desired.stepsSinceEpoch(), desired.epoch())
                : desired.epoch();
        return Math.max(pipelineSince, cachesKept ? heldStepsFrom : desired.epoch());
    }

    /** The stage it holds READY, in a newer epoch, and the coordinator says since when it has held it. */
    private static boolean holdsOn(Assignment desired, Held held) {
        return desired.keptSinceEpoch() > 0 && desired.epoch() > held.epoch() && desired.sameStageAs(held.current())
                && held.phase() == LoadPhase.READY && held.engineLoaded();
    }

    /** A load's steps, in the order they run. */
    enum LoadStep {
        /** Close the engine stages the assignment replaced (their weights and KV caches freed). */
        RELEASE,
        /** Fetch the signed manifest, verify its signature, download the shards the layer range needs. */
        FETCH,
        /** Bind the verified files into the partition checksum; check the model's config against the layer range. */
        VERIFY,
        /** Load the shards into an engine stage. */
        LOAD,
        /** Run a short sequence through it so kernels and allocators are warm before READY. */
        WARM,
        /** Make it the stage that serves (READY), closing the one it replaces. */
        PUBLISH,
        /** Tell the coordinator: READY, with the partition's checksum and memory. */
        REPORT,
        /** Superseded before publishing: close the engine stage it loaded, which nothing else holds. */
        ABANDON
    }

    /**
     * How far a load has got.
     *
     * @param done        the steps carried out so far (a prefix of {@link LoadStep}'s order, ABANDON aside)
     * @param toRelease   stages replaced by the assignment are still open
     * @param superseded  a newer assignment (or a dismissal) took over: nothing more is written, reported or published
     * @param engineHeld  it holds an engine stage it loaded and has not published (nor closed)
     */
    record LoadProgress(java.util.Set<LoadStep> done, boolean toRelease, boolean superseded, boolean engineHeld) {

        LoadProgress {
            done = done.isEmpty() ? java.util.EnumSet.noneOf(LoadStep.class) : java.util.EnumSet.copyOf(done);
        }

        /** A load that has not started. */
        static LoadProgress start(boolean toRelease) {
            return new LoadProgress(java.util.Set.of(), toRelease, false, false);
        }
    }

    /** The next step of a load, or null once it is over (reported, or superseded with nothing of its own left open). */
    static LoadStep nextLoadStep(LoadProgress p) {
        if (p.superseded()) {
            return p.engineHeld() ? LoadStep.ABANDON : null;
        }
        if (p.toRelease()) {
            return LoadStep.RELEASE;
        }
        for (LoadStep step : LoadStep.values()) {
            if (step != LoadStep.RELEASE && step != LoadStep.ABANDON && !p.done().contains(step)) {
                return step;
            }
        }
        return null;
    }
}
