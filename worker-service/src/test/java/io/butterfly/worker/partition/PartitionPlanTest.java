package io.butterfly.worker.partition;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.worker.cluster.Endpoint;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The worker's partition plan over seeded random assignments and held states (two models, overlapping layer ranges,
 * small epochs, every load phase): what is held on, kept or loaded, and that the plan converges, so an assignment
 * said again never loads anything a second time.
 */
class PartitionPlanTest {

    private static final int CASES = 20_000;
    private static final Endpoint REGISTRY = new Endpoint("registry", "127.0.0.1", 9081);
    private static final Endpoint COORDINATOR = new Endpoint("coordinator-0", "127.0.0.1", 9080);

    private static Assignment assignment(Random r) {
        int start = r.nextInt(3) * 2;
        int end = start + 2 + r.nextInt(2) * 2;
        return new Assignment(r.nextBoolean() ? "a" : "b", start, end, start == 0, r.nextBoolean(),
                1 + r.nextInt(4), 1 + r.nextInt(3), REGISTRY, COORDINATOR, List.of(COORDINATOR), r.nextInt(5));
    }

    private static PartitionPlan.Held held(Random r) {
        Assignment current = r.nextInt(5) == 0 ? null : assignment(r);
        LoadPhase phase = current == null ? LoadPhase.LOAD_PHASE_UNSPECIFIED
                : LoadPhase.values()[r.nextInt(LoadPhase.values().length)];
        boolean engine = phase == LoadPhase.READY || current != null && r.nextInt(4) == 0;
        // a partition serves in its assignment's epoch (the manager moves both together)
        return new PartitionPlan.Held(current, phase, current == null ? 0 : current.epoch(), engine);
    }

    /** Like {@code desired}, or the same stage in another epoch, so that the interesting cases come up often. */
    private static Assignment near(Random r, PartitionPlan.Held held) {
        Assignment c = held.current();
        if (c == null || r.nextInt(3) == 0) {
            return assignment(r);
        }
        long epoch = r.nextBoolean() ? c.epoch() : c.epoch() + 1 + r.nextInt(2);
        return new Assignment(c.modelId(), c.layerStart(), c.layerEnd(), c.hasEmbedding(), c.hasHead(), epoch,
                c.term() + r.nextInt(2), REGISTRY, COORDINATOR, List.of(COORDINATOR), r.nextInt((int) epoch + 1));
    }

    @Test
    void aHeldStageServesOnInANewerEpochOnlyIfItIsTheSameStageLoadedAndReady() {
        Random r = new Random(45);
        int heldOn = 0;
        for (int i = 0; i < CASES; i++) {
            PartitionPlan.Held held = held(r);
            Assignment desired = near(r, held);
            PartitionPlan.Step step = PartitionPlan.next(desired, held);
            boolean mayHoldOn = desired.sameStageAs(held.current()) && held.phase() == LoadPhase.READY
                    && held.engineLoaded() && desired.epoch() > held.epoch() && desired.keptSinceEpoch() > 0;
            assertThat(step instanceof PartitionPlan.HoldOn).as("%s over %s", desired, held).isEqualTo(mayHoldOn);
            if (step instanceof PartitionPlan.HoldOn holdOn) {
                heldOn++;
                // caches are the sequences' only if the stage was held without a break since it was kept from
                assertThat(holdOn.keepCaches()).isEqualTo(held.epoch() >= desired.keptSinceEpoch());
            }
        }
        assertThat(heldOn).as("cases that hold on").isGreaterThan(CASES / 50);
    }

    /**
     * The epochs whose steps a held-on stage runs (docs/scale-out.md): back to the epoch its pipeline has been the same
     * since, never before its caches were its own (or, caches dropped, before this epoch), never after this epoch;
     * without the coordinator's word, this epoch only, as before pipelines kept their epoch.
     */
    @Test
    void aHeldOnStageRunsStepsBackToItsPipelinesEpochButNeverPastItsCaches() {
        Random r = new Random(52);
        int older = 0;
        for (int i = 0; i < CASES; i++) {
            long epoch = 2 + r.nextInt(6);
            long stepsSince = r.nextInt(4) == 0 ? 0 : r.nextInt((int) epoch + 2); // 0: not said; may exceed it
            Assignment desired = new Assignment("a", 0, 2, true, false, epoch, 1, REGISTRY, COORDINATOR,
                    List.of(COORDINATOR), 1, List.of(), 0, stepsSince);
            long heldFrom = 1 + r.nextInt((int) epoch - 1);
            boolean cachesKept = r.nextBoolean();
            long from = PartitionPlan.stepsFrom(desired, heldFrom, cachesKept);
            assertThat(from).isBetween(1L, epoch);
            if (stepsSince == 0 || !cachesKept) {
                assertThat(from).as("this epoch only").isEqualTo(epoch);
            } else {
                assertThat(from).isEqualTo(Math.max(Math.min(stepsSince, epoch), heldFrom));
            }
            if (from < epoch) {
                older++;
            }
        }
        assertThat(older).as("cases that run older epochs' steps").isGreaterThan(CASES / 10);
    }

    @Test
    void theSamePartitionSaidAgainIsNeverLoadedAgainUnlessItsLoadFailed() {
        Random r = new Random(4545);
        for (int i = 0; i < CASES; i++) {
            PartitionPlan.Held held = held(r);
            Assignment desired = near(r, held);
            PartitionPlan.Step step = PartitionPlan.next(desired, held);
            if (desired.samePartitionAs(held.current())) {
                if (held.phase() == LoadPhase.FAILED) {
                    assertThat(step).as("a failed load is tried again").isInstanceOf(PartitionPlan.Load.class);
                } else {
                    assertThat(step).isEqualTo(new PartitionPlan.Keep(held.phase() == LoadPhase.READY));
                }
            } else if (!desired.sameStageAs(held.current())) {
                // another stage: its weights are never another range's
                assertThat(step).isEqualTo(new PartitionPlan.Load(held.engineLoaded()));
            }
        }
    }

    /**
     * Level-triggered: whatever the step, once carried out (a load started, or finished, a stage held on) the same
     * assignment decided again is a {@code Keep}, reporting READY only if it is READY.
     */
    @Test
    void thePlanConverges() {
        Random r = new Random(454545);
        for (int i = 0; i < CASES; i++) {
            PartitionPlan.Held held = held(r);
            Assignment desired = near(r, held);
            PartitionPlan.Step step = PartitionPlan.next(desired, held);
            PartitionPlan.Held loading = new PartitionPlan.Held(desired, LoadPhase.DOWNLOADING, desired.epoch(), false);
            PartitionPlan.Held ready = new PartitionPlan.Held(desired, LoadPhase.READY, desired.epoch(), true);
            PartitionPlan.Held after = switch (step.getClass().getSimpleName()) {
                case "Load" -> r.nextBoolean() ? loading : ready;
                case "HoldOn" -> ready;
                default -> new PartitionPlan.Held(desired, held.phase(), held.epoch(), held.engineLoaded());
            };
            PartitionPlan.Step again = PartitionPlan.next(desired, after);
            if (after.phase() == LoadPhase.FAILED) {
                assertThat(again).isInstanceOf(PartitionPlan.Load.class);
            } else {
                assertThat(again).as("%s then %s over %s", step, desired, after)
                        .isEqualTo(new PartitionPlan.Keep(after.phase() == LoadPhase.READY));
            }
        }
    }

    /**
     * A load's steps, run against a simulated load that a newer assignment may supersede at any point and whose
     * replaced stages may still be open: it releases them before anything else, then fetches, verifies, loads, warms,
     * publishes and reports in that order, each once; superseded, it stops, and an engine stage it loaded but did not
     * publish is closed (ABANDON) and nothing after is done.
     */
    @Test
    void aLoadRunsItsStepsInOrderEachOnceAndASupersededOneClosesWhatItDidNotPublish() {
        Random r = new Random(4545_45);
        List<PartitionPlan.LoadStep> order = List.of(PartitionPlan.LoadStep.FETCH, PartitionPlan.LoadStep.VERIFY,
                PartitionPlan.LoadStep.LOAD, PartitionPlan.LoadStep.WARM, PartitionPlan.LoadStep.PUBLISH,
                PartitionPlan.LoadStep.REPORT);
        int superseded = 0;
        int abandoned = 0;
        for (int i = 0; i < CASES / 10; i++) {
            boolean toRelease = r.nextBoolean();
            int supersededBefore = 1 + r.nextInt(9); // a newer assignment arrives after this many steps; >= 7: never
            PartitionPlan.LoadProgress p = PartitionPlan.LoadProgress.start(toRelease);
            List<PartitionPlan.LoadStep> ran = new java.util.ArrayList<>();
            for (PartitionPlan.LoadStep step; (step = PartitionPlan.nextLoadStep(p)) != null; ) {
                assertThat(ran).as("no step twice").doesNotContain(step);
                ran.add(step);
                java.util.Set<PartitionPlan.LoadStep> done = java.util.EnumSet.noneOf(PartitionPlan.LoadStep.class);
                done.addAll(p.done());
                done.add(step);
                boolean engine = switch (step) {
                    case LOAD -> true;
                    case PUBLISH, ABANDON -> false;
                    default -> p.engineHeld();
                };
                boolean newer = p.superseded() || ran.size() >= supersededBefore;
                p = new PartitionPlan.LoadProgress(done, step == PartitionPlan.LoadStep.RELEASE ? false : p.toRelease(),
                        newer, engine);
                assertThat(ran.size()).as("a load ends").isLessThan(10);
            }
            List<PartitionPlan.LoadStep> work = ran.stream()
                    .filter(s -> s != PartitionPlan.LoadStep.RELEASE && s != PartitionPlan.LoadStep.ABANDON).toList();
            assertThat(work).as("steps in order, none skipped").isEqualTo(order.subList(0, work.size()));
            if (toRelease) {
                assertThat(ran.get(0)).as("the replaced stages are released first").isEqualTo(PartitionPlan.LoadStep.RELEASE);
            } else if (!toRelease) {
                assertThat(ran).doesNotContain(PartitionPlan.LoadStep.RELEASE);
            }
            boolean loadedUnpublished = work.contains(PartitionPlan.LoadStep.LOAD)
                    && !work.contains(PartitionPlan.LoadStep.PUBLISH);
            if (loadedUnpublished) {
                abandoned++;
                assertThat(ran.get(ran.size() - 1)).as("an unpublished engine stage is closed, last")
                        .isEqualTo(PartitionPlan.LoadStep.ABANDON);
            } else {
                assertThat(ran).doesNotContain(PartitionPlan.LoadStep.ABANDON);
            }
            int natural = order.size() + (toRelease ? 1 : 0);
            if (supersededBefore < natural) {
                superseded++;
                assertThat(work).as("a superseded load stops short of its report").hasSizeLessThan(order.size());
            } else {
                assertThat(work).as("a load no one superseded runs to its report").isEqualTo(order);
            }
        }
        assertThat(superseded).isGreaterThan(CASES / 100);
        assertThat(abandoned).isGreaterThan(CASES / 200);
    }
}
