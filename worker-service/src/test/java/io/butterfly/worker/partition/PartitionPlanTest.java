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
}
