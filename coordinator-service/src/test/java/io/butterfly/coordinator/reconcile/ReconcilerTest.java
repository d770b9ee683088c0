package io.butterfly.coordinator.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.RecoveryPhase;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.CapacityWeightedPlanner;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;

/**
 * The leader's control plane as a function, with plain values and no threads: the state comes from the real reducer,
 * the observations (time, term, the model, discovery's members, what became of earlier attempts) are written here,
 * and what the actions would do is simulated by applying their commands and outcomes.
 */
class ReconcilerTest {

    private static final long TERM = 7;
    /** Six layers of 1000 B (weights, KV cache included), embedding and head 500 B each, 100 B headroom per stage. */
    private static final ModelFootprint MODEL = new ModelFootprint(new long[] {1000, 1000, 1000, 1000, 1000, 1000},
            500, 500, 100);
    private static final Observations.ModelView VIEW = new Observations.ModelView("tiny", "root", MODEL);

    private final Reconciler reconciler = new Reconciler(
            new Reconciler.Settings("tiny", 3, "butterfly", "1.0.0", "capacity-weighted"), new CapacityWeightedPlanner());

    /** The replicated state (through the reducer) and what the leader observes. */
    private final class Cluster {
        ClusterState state = ClusterState.initial();
        long index;
        long now = 1_000_000;
        long term = TERM;
        Observations.ModelView model = VIEW;
        List<NodeInfo> members = new ArrayList<>();
        final Map<String, Attempts> attempts = new HashMap<>();
        final List<ClusterCommand> committed = new ArrayList<>();
        Reconciler using = reconciler;

        List<Action> next() {
            return using.next(state, new Observations(now, term, model, members, attempts));
        }

        void apply(ClusterCommand c) {
            state = ClusterReducer.apply(state, c, ++index);
            committed.add(c);
        }

        /** Commits what is due, one commit at a time, as the control loop does; the other actions due then. */
        List<Action> settle() {
            for (int i = 0; i < 100; i++) {
                List<Action> due = next();
                Action.Commit commit = (Action.Commit) due.stream().filter(a -> a instanceof Action.Commit).findFirst()
                        .orElse(null);
                if (commit == null) {
                    return due;
                }
                commit.commands().forEach(this::apply);
                succeeded(commit.key());
            }
            throw new AssertionError("still committing after 100 rounds: " + next());
        }

        void succeeded(String key) {
            attempts.put(key, attempts.getOrDefault(key, Attempts.NONE).succeeded(now));
        }

        void failed(String key) {
            attempts.put(key, attempts.getOrDefault(key, Attempts.NONE).failed(now));
        }

        /** Every due assignment is taken and its stage loads; every due validation passes. */
        void loadAndValidate(List<Action> due) {
            for (Action a : due) {
                if (a instanceof Action.Assign assign) {
                    succeeded(a.key());
                    apply(new ClusterCommand.LoadCompleted(assign.node().nodeId(), assign.assignment().epoch(),
                            "c-" + assign.node().nodeId(), now));
                }
            }
            for (Action a : settle()) {
                if (a instanceof Action.Validate v) {
                    succeeded(a.key());
                    apply(valid(v.epoch()));
                }
            }
        }

        WeightValidation.Status validated(long epoch) {
            return state.checks().validation() == null || state.checks().validation().epoch() != epoch ? null
                    : state.checks().validation().status();
        }

        ClusterState readyWith(String... workers) {
            return readyWith(0, workers);
        }

        ClusterState readyWith(long memory, String... workers) {
            for (String w : workers) {
                members.add(worker(w, memory));
            }
            loadAndValidate(settle());
            assertThat(state.system()).isEqualTo(SystemState.READY);
            return state;
        }
    }

    private static NodeInfo worker(String id, long memory) {
        return new NodeInfo(id, "worker", id, 9000, 8000, 4, memory, 10.0, "cpu");
    }

    private static ClusterCommand.WeightsValidated valid(long epoch) {
        return new ClusterCommand.WeightsValidated(new WeightValidation(epoch, WeightValidation.Status.VALID, "root",
                "partition-root", List.of(), List.of(), List.of(), 1), 1);
    }

    private static <T extends Action> List<T> only(List<Action> actions, Class<T> kind) {
        return actions.stream().filter(kind::isInstance).map(kind::cast).toList();
    }

    private static List<String> names(List<ClusterCommand> commands) {
        return commands.stream().map(c -> c.getClass().getSimpleName()).toList();
    }

    @Test
    void bootstrapsToReadyInTheSpecsOrderAndLeavesAWorkerBeyondTheExpectedAsASpare() {
        Cluster c = new Cluster();
        c.model = null;
        assertThat(c.settle()).containsExactly(new Action.FetchModel());
        assertThat(names(c.committed)).containsExactly("Bootstrap", "ConfigChange");

        c.model = VIEW;
        c.members.addAll(List.of(worker("w2", 0), worker("w0", 0)));
        assertThat(c.settle()).isEmpty(); // two of the three expected so far
        c.members.addAll(List.of(worker("w3", 0), worker("w1", 0)));
        List<Action> due = c.settle();
        assertThat(names(c.committed)).containsExactly("Bootstrap", "ConfigChange", "ModelResolved", "NodeJoined",
                "ConfigChange", "NodeJoined", "ConfigChange", "NodeJoined", "ConfigChange", "NodeJoined", "ConfigChange",
                "FeasibilityAssessed", "PartitionsAssigned");
        // The first three by id: w3 is a spare.
        assertThat(c.state.pipeline()).containsExactly("w0", "w1", "w2");
        assertThat(c.state.spares()).containsExactly("w3");
        assertThat(only(due, Action.Assign.class)).extracting(a -> a.node().nodeId()).containsExactly("w0", "w1", "w2");
        assertThat(only(due, Action.Assign.class)).allSatisfy(a -> {
            assertThat(a.assignment().epoch()).isEqualTo(1);
            assertThat(a.assignment().term()).isEqualTo(TERM);
            assertThat(a.assignment().keptSinceEpoch()).isEqualTo(1);
        });

        // Assignments taken but not loaded yet: nothing more; once all stages are loaded, the cross-validation.
        only(due, Action.Assign.class).forEach(a -> c.succeeded(a.key()));
        assertThat(c.settle()).isEmpty();
        c.apply(new ClusterCommand.LoadCompleted("w0", 1, "c0", c.now));
        c.apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", c.now));
        assertThat(c.settle()).isEmpty();
        c.apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", c.now));
        assertThat(c.settle()).containsExactly(new Action.Validate(1));
        c.apply(valid(1));
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.settle()).isEmpty();
    }

    @Test
    void anInfeasibleFirstPlanIsRecordedOnceAndPlannedAgainWhenMoreCapacityJoins() {
        Cluster c = new Cluster();
        for (String w : List.of("w0", "w1", "w2")) {
            c.members.add(worker(w, 1700)); // each holds one layer and an end: three hold half the model
        }
        assertThat(c.settle()).isEmpty();
        assertThat(c.state.epoch()).isZero();
        assertThat(c.state.checks().feasibility().feasible()).isFalse();
        assertThat(c.state.statusMessage()).startsWith("InsufficientResources");
        int commits = c.committed.size();
        c.now += 10_000;
        assertThat(c.settle()).isEmpty();
        assertThat(c.committed).as("the same verdict is not committed again").hasSize(commits);

        c.members.add(worker("w3", 10_000));
        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(1);
        assertThat(c.state.pipeline()).contains("w3");
        assertThat(only(due, Action.Assign.class)).hasSize(c.state.pipeline().size());
    }

    @Test
    void aNewLeaderAnnouncesTheCurrentAssignmentsWithItsTermAndPlansNothing() {
        Cluster c = new Cluster();
        c.readyWith("w0", "w1", "w2");
        long epoch = c.state.epoch();
        assertThat(c.settle()).isEmpty();

        c.term = TERM + 1;
        List<Action> due = c.settle();
        assertThat(only(due, Action.Assign.class)).extracting(a -> a.node().nodeId()).containsExactly("w0", "w1", "w2");
        assertThat(only(due, Action.Assign.class)).allSatisfy(a -> {
            assertThat(a.assignment().epoch()).isEqualTo(epoch);
            assertThat(a.assignment().term()).isEqualTo(TERM + 1);
            assertThat(a.why()).isEqualTo("announce");
        });
        assertThat(c.state.epoch()).isEqualTo(epoch);
    }

    @Test
    void aLostStageGoesToASpareInANewEpochAndTheSurvivorsKeepTheirsWithTheirCaches() {
        Cluster c = new Cluster();
        c.readyWith("w0", "w1", "w2", "w3");
        List<StageAssignment> before = c.state.stages();
        StageAssignment lost = before.get(1);
        c.apply(new ClusterCommand.NodeSuspected(lost.nodeId(), c.now, 9, "heartbeat stream closed", c.now));
        c.apply(new ClusterCommand.NodeFailed(lost.nodeId(), c.now, 9, "heartbeat stream closed", c.now));
        assertThat(c.state.system()).isEqualTo(SystemState.DEGRADED);
        assertThat(c.state.recoveryPhase()).isEqualTo(RecoveryPhase.REPLANNING);

        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(2);
        assertThat(c.state.plan(2).orElseThrow().reason()).startsWith("w1 FAILED: spare w3 takes [2, 4) of w1");
        assertThat(c.state.stages()).containsExactly(before.get(0),
                new StageAssignment("w3", lost.layerStart(), lost.layerEnd(), false, false), before.get(2));
        assertThat(c.state.keptStages(1, 2)).containsExactly("w0", "w2");
        assertThat(c.state.recoveryPhase()).isEqualTo(RecoveryPhase.LOADING);
        Map<String, Long> keptSince = new HashMap<>();
        only(due, Action.Assign.class).forEach(a -> keptSince.put(a.node().nodeId(), a.assignment().keptSinceEpoch()));
        assertThat(keptSince).isEqualTo(Map.of("w0", 1L, "w3", 2L, "w2", 1L));

        c.loadAndValidate(due);
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.recovery().toEpoch()).isEqualTo(2);
        assertThat(c.state.recovery().lostNodes()).containsExactly("w1");
        assertThat(c.state.recoveryPhase()).isNull();
    }

    /** A cluster whose first plan forms {@code pipelines} pipelines over its {@code workers}, {@code spares} kept out. */
    private Cluster pipelines(int pipelines, int spares, int workers) {
        Cluster c = new Cluster();
        c.using = new Reconciler(new Reconciler.Settings("tiny", workers, "butterfly", "1.0.0", "capacity-weighted")
                .withPipelines(pipelines, spares), new CapacityWeightedPlanner());
        return c;
    }

    private static List<String> nodes(List<StageAssignment> pipeline) {
        return pipeline.stream().map(StageAssignment::nodeId).toList();
    }

    @Test
    void severalPipelinesAreFormedOverTheWorkersEachCoveringTheModelAndAllServe() {
        Cluster c = pipelines(2, 0, 4);
        c.readyWith("w0", "w1", "w2", "w3");
        List<List<StageAssignment>> pipelines = c.state.pipelines();
        assertThat(pipelines).hasSize(2);
        for (List<StageAssignment> p : pipelines) {
            assertThat(p.get(0).layerStart()).isZero();
            assertThat(p.get(0).hasEmbedding()).isTrue();
            assertThat(p.get(p.size() - 1).layerEnd()).isEqualTo(6);
            assertThat(p.get(p.size() - 1).hasHead()).isTrue();
            assertThat(c.state.pipelineServes(p)).isTrue();
        }
        assertThat(c.state.pipeline()).containsExactlyInAnyOrder("w0", "w1", "w2", "w3");
        assertThat(c.state.plan(1).orElseThrow().reason()).isEqualTo("bootstrap: 2 pipelines, 0 spares");
    }

    @Test
    void aLostStageReplansOnlyItsPipelineFromASpareAndTheOtherServesMeanwhile() {
        Cluster c = pipelines(2, 1, 5);
        c.readyWith("w0", "w1", "w2", "w3", "w4");
        List<List<StageAssignment>> before = c.state.pipelines();
        assertThat(before).hasSize(2);
        assertThat(c.state.spares()).hasSize(1);
        String spare = c.state.spares().get(0);
        String lost = before.get(0).get(before.get(0).size() - 1).nodeId();
        c.apply(new ClusterCommand.NodeSuspected(lost, c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed(lost, c.now, 9, "closed", c.now));
        assertThat(c.state.pipelineServes(before.get(0))).isFalse();
        assertThat(c.state.pipelineServes(before.get(1))).isTrue();

        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(2);
        List<List<StageAssignment>> after = c.state.pipelines();
        assertThat(after.get(1)).isEqualTo(before.get(1));
        assertThat(nodes(after.get(0))).contains(spare).doesNotContain(lost);
        assertThat(c.state.plan(2).orElseThrow().reason()).startsWith(lost + " FAILED: pipeline 0: spare " + spare);
        // The untouched pipeline serves on across the epoch change, its steps still of epoch 1 (its workers run them
        // in epoch 2 too); the re-planned one's steps are of epoch 2.
        assertThat(c.state.pipelineServes(after.get(1))).isTrue();
        assertThat(c.state.servingPipelines()).containsExactly(false, true);
        assertThat(c.state.stepsEpoch(after.get(1))).isEqualTo(1);
        assertThat(c.state.stepsEpoch(after.get(0))).isEqualTo(2);
        // Its workers hold on into epoch 2 (no load), their report changing nothing; the spare loads.
        for (Action a : due) {
            if (a instanceof Action.Assign assign) {
                boolean untouched = nodes(before.get(1)).contains(assign.node().nodeId());
                assertThat(assign.assignment().stepsSinceEpoch()).isEqualTo(untouched ? 1 : 2);
                if (untouched) {
                    assertThat(assign.assignment().keptSinceEpoch()).isEqualTo(1);
                    c.apply(new ClusterCommand.LoadCompleted(assign.node().nodeId(), 2, "c", c.now));
                }
            }
        }
        assertThat(c.state.system()).isEqualTo(SystemState.DEGRADED);
        assertThat(c.state.pipelineServes(after.get(1))).isTrue();
        assertThat(c.state.pipelineServes(after.get(0))).isFalse();

        c.loadAndValidate(due.stream().filter(a -> !(a instanceof Action.Assign assign)
                || !nodes(before.get(1)).contains(assign.node().nodeId())).toList());
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.pipelines()).allMatch(c.state::pipelineServes);
    }

    @Test
    void aPipelineThatCannotBeMendedIsDroppedAndItsSurvivorBecomesASpareWhileTheOtherKeepsItsStages() {
        Cluster c = pipelines(2, 0, 4);
        c.readyWith(4_000, "w0", "w1", "w2", "w3"); // a worker holds half the model: two to a pipeline
        List<List<StageAssignment>> before = c.state.pipelines();
        assertThat(before).hasSize(2).allMatch(p -> p.size() == 2);
        String lost = before.get(1).get(0).nodeId();
        String survivor = before.get(1).get(1).nodeId();
        c.apply(new ClusterCommand.NodeSuspected(lost, c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed(lost, c.now, 9, "closed", c.now));
        c.loadAndValidate(c.settle());
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.pipelines()).containsExactly(before.get(0));
        assertThat(c.state.spares()).containsExactly(survivor);
        assertThat(c.state.plan(2).orElseThrow().reason()).contains("pipeline 1: dropped");
    }

    @Test
    void joiningWorkersAddAPipelineOnceTheSparesHoldOneAndTheServingPipelineKeepsItsStages() {
        Cluster c = pipelines(0, 1, 4); // the planner chooses the count, one spare kept
        c.readyWith(4_000, "w0", "w1", "w2", "w3"); // a worker holds half the model: two to a pipeline
        List<List<StageAssignment>> before = c.state.pipelines();
        assertThat(before).hasSize(1);
        assertThat(c.state.spares()).hasSize(1);

        c.members.add(worker("w4", 4_000)); // two spares: one kept, one alone cannot hold the model
        c.loadAndValidate(c.settle());
        assertThat(c.state.epoch()).isEqualTo(1);
        assertThat(c.state.spares()).hasSize(2);

        c.members.add(worker("w5", 4_000)); // three spares: a pipeline of two, one kept
        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(2);
        List<List<StageAssignment>> after = c.state.pipelines();
        assertThat(after).hasSize(2);
        assertThat(after.get(0)).isEqualTo(before.get(0));
        assertThat(nodes(after.get(1))).hasSize(2).doesNotContainAnyElementsOf(nodes(before.get(0)));
        assertThat(c.state.spares()).hasSize(1);
        assertThat(c.state.plan(2).orElseThrow().reason()).startsWith("pipeline 1 added over ").endsWith("(1 spare left)");
        // The serving pipeline's workers hold on into epoch 2 with their caches; the new pipeline loads.
        for (Action a : due) {
            if (a instanceof Action.Assign assign) {
                boolean serving = nodes(before.get(0)).contains(assign.node().nodeId());
                assertThat(assign.assignment().keptSinceEpoch()).isEqualTo(serving ? 1 : 2);
            }
        }
        c.loadAndValidate(due);
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.pipelines()).hasSize(2).allMatch(c.state::pipelineServes);

        c.members.add(worker("w6", 4_000)); // two spares again: nothing more to add
        c.loadAndValidate(c.settle());
        assertThat(c.state.epoch()).isEqualTo(2);
    }

    @Test
    void aDroppedPipelineOfAConfiguredCountIsFormedAgainWhenAWorkerJoinsAndNoMoreThanTheCount() {
        Cluster c = pipelines(2, 0, 4);
        c.readyWith(4_000, "w0", "w1", "w2", "w3"); // two workers to a pipeline, no spare
        List<StageAssignment> kept = c.state.pipelines().get(0);
        String lost = c.state.pipelines().get(1).get(0).nodeId();
        String survivor = c.state.pipelines().get(1).get(1).nodeId();
        c.apply(new ClusterCommand.NodeSuspected(lost, c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed(lost, c.now, 9, "closed", c.now));
        c.loadAndValidate(c.settle());
        assertThat(c.state.pipelines()).containsExactly(kept); // dropped: no spare to mend it
        assertThat(c.state.spares()).containsExactly(survivor);

        c.members.add(worker("w4", 4_000));
        c.loadAndValidate(c.settle());
        assertThat(c.state.epoch()).isEqualTo(3);
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.pipelines()).hasSize(2);
        assertThat(c.state.pipelines().get(0)).isEqualTo(kept);
        assertThat(nodes(c.state.pipelines().get(1))).containsExactlyInAnyOrder(survivor, "w4");

        c.members.add(worker("w5", 4_000));
        c.members.add(worker("w6", 4_000));
        c.loadAndValidate(c.settle());
        assertThat(c.state.epoch()).isEqualTo(3); // two configured: the joiners stay spares
        assertThat(c.state.spares()).containsExactly("w5", "w6");
    }

    @Test
    void aPipelineCountThePoolCannotHoldIsRecordedInfeasibleAndNothingIsPlanned() {
        Cluster c = pipelines(3, 0, 4);
        for (String w : List.of("w0", "w1", "w2", "w3")) {
            c.members.add(worker(w, 4_000)); // two workers to a pipeline: three pipelines need six
        }
        c.settle();
        assertThat(c.state.epoch()).isZero();
        assertThat(c.state.checks().feasibility().feasible()).isFalse();
    }

    @Test
    void withoutASpareTheSurvivorsTakeTheLostRange() {
        Cluster c = new Cluster();
        c.readyWith("w0", "w1", "w2");
        c.apply(new ClusterCommand.NodeSuspected("w2", c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed("w2", c.now, 9, "closed", c.now));
        c.loadAndValidate(c.settle());
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.epoch()).isEqualTo(2);
        assertThat(c.state.pipeline()).containsExactly("w0", "w1");
        assertThat(c.state.stages().get(1).hasHead()).isTrue();
        assertThat(c.state.stages().get(1).layerEnd()).isEqualTo(6);
        assertThat(c.state.keptStages(1, 2)).containsExactly("w0");
    }

    @Test
    void whenTheSurvivorsCannotHoldTheModelTheSystemWaitsForCapacityAndReplansWhenItJoins() {
        Cluster c = new Cluster();
        for (String w : List.of("w0", "w1", "w2")) {
            c.members.add(worker(w, 2_800)); // two layers and an end each: two workers cannot hold six layers
        }
        c.loadAndValidate(c.settle());
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        c.apply(new ClusterCommand.NodeSuspected("w1", c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed("w1", c.now, 9, "closed", c.now));

        assertThat(c.settle()).isEmpty();
        assertThat(c.state.epoch()).isEqualTo(1);
        assertThat(c.state.system()).isEqualTo(SystemState.DEGRADED);
        assertThat(c.state.statusMessage()).startsWith("InsufficientResources");
        assertThat(c.state.recoveryPhase()).isEqualTo(RecoveryPhase.WAITING_FOR_CAPACITY);
        assertThat(c.state.recoveryPhase().recovering()).isFalse();
        int commits = c.committed.size();
        c.now += 5_000;
        assertThat(c.settle()).isEmpty();
        assertThat(c.committed).hasSize(commits);

        c.members.add(worker("w9", 3_000));
        c.loadAndValidate(c.settle());
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.state.pipeline()).containsExactly("w0", "w9", "w2");
    }

    @Test
    void aStageThatCameBackWithoutItsPartitionIsSentItAgainAtOnce() {
        Cluster c = new Cluster();
        for (String w : List.of("w0", "w1", "w2")) {
            c.members.add(worker(w, 2_800)); // no re-plan can do without w1: it stays in the plan
        }
        c.loadAndValidate(c.settle());
        c.apply(new ClusterCommand.NodeSuspected("w1", c.now, 9, "closed", c.now));
        c.apply(new ClusterCommand.NodeFailed("w1", c.now, 9, "closed", c.now));
        c.settle();
        c.now += 1_000;
        c.apply(new ClusterCommand.NodeRecovered("w1", false, c.now, c.now));
        List<Action.Assign> due = only(c.settle(), Action.Assign.class);
        assertThat(due).singleElement().satisfies(a -> {
            assertThat(a.node().nodeId()).isEqualTo("w1");
            assertThat(a.assignment().epoch()).isEqualTo(1);
            assertThat(a.why()).isEqualTo("it came back without its partition");
        });
        c.loadAndValidate(List.copyOf(due));
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
    }

    @Test
    void aLoadThatFailedIsRetriedEveryMinuteWhenAnotherAttemptCanMendItAndNeverWhenNot() {
        Cluster c = new Cluster();
        c.members.addAll(List.of(worker("w0", 0), worker("w1", 0), worker("w2", 0)));
        only(c.settle(), Action.Assign.class).forEach(a -> c.succeeded(a.key()));
        c.apply(new ClusterCommand.LoadFailed("w0", 1, "TIMEOUT", "registry away", c.now));
        c.apply(new ClusterCommand.LoadFailed("w1", 1, "CHECKSUM_MISMATCH", "layer 1", c.now));
        c.apply(new ClusterCommand.LoadProgressed("w2", 1, PartitionState.DOWNLOADING, 0.5, "layer-4", c.now));
        c.now += 59_000;
        assertThat(only(c.settle(), Action.Assign.class)).isEmpty();
        c.now += 2_000;
        List<Action.Assign> due = only(c.settle(), Action.Assign.class);
        assertThat(due).singleElement().satisfies(a -> {
            assertThat(a.node().nodeId()).isEqualTo("w0");
            assertThat(a.why()).isEqualTo("its load failed (TIMEOUT)");
        });
        c.succeeded(due.get(0).key());
        c.now += 30_000;
        assertThat(only(c.settle(), Action.Assign.class)).isEmpty();
        c.now += 31_000;
        assertThat(only(c.settle(), Action.Assign.class)).extracting(a -> a.node().nodeId()).containsExactly("w0");
        c.now += 600_000;
        assertThat(only(c.settle(), Action.Assign.class)).extracting(a -> a.node().nodeId()).doesNotContain("w1");
    }

    @Test
    void anAssignmentNotAcceptedTenTimesIsATimeoutLoadFailureThenTriedEveryMinute() {
        Cluster c = new Cluster();
        c.members.addAll(List.of(worker("w0", 0), worker("w1", 0), worker("w2", 0)));
        List<Action.Assign> first = only(c.settle(), Action.Assign.class);
        first.stream().filter(a -> !a.node().nodeId().equals("w1")).forEach(a -> {
            c.succeeded(a.key());
            c.apply(new ClusterCommand.LoadCompleted(a.node().nodeId(), 1, "c", c.now));
        });
        String key = Action.assignKey("w1", 1, TERM);
        for (int attempt = 1; attempt <= Reconciler.MAX_ASSIGN_ATTEMPTS; attempt++) {
            List<Action.Assign> due = only(c.settle(), Action.Assign.class);
            assertThat(due).as("attempt " + attempt).singleElement()
                    .satisfies(a -> assertThat(a.node().nodeId()).isEqualTo("w1"));
            c.failed(key);
            assertThat(only(c.settle(), Action.Assign.class)).as("backing off after attempt " + attempt).isEmpty();
            c.now += Reconciler.assignBackoffMs(attempt);
        }
        c.settle();
        assertThat(c.committed.get(c.committed.size() - 1)).isInstanceOf(ClusterCommand.LoadFailed.class);
        assertThat(c.state.nodes().get("w1").failureCode()).isEqualTo("TIMEOUT");
        assertThat(only(c.settle(), Action.Assign.class)).isEmpty();
        c.now += Reconciler.RESEND_INTERVAL_MS;
        assertThat(only(c.settle(), Action.Assign.class)).singleElement()
                .satisfies(a -> assertThat(a.node().nodeId()).isEqualTo("w1"));
    }

    @Test
    void aValidationThatMissedReportsRunsAgainAndADisagreementIsFinal() {
        Cluster c = new Cluster();
        c.members.addAll(List.of(worker("w0", 0), worker("w1", 0), worker("w2", 0)));
        for (Action.Assign a : only(c.settle(), Action.Assign.class)) {
            c.succeeded(a.key());
            c.apply(new ClusterCommand.LoadCompleted(a.node().nodeId(), 1, "c", c.now));
        }
        assertThat(c.settle()).containsExactly(new Action.Validate(1));
        c.failed("validate/1");
        c.apply(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.INCOMPLETE, null,
                null, List.of("w0", "w1"), List.of("w2"), List.of("no report from w2"), c.now), c.now));
        assertThat(c.settle()).isEmpty();
        c.now += Reconciler.VALIDATE_RETRY_MS;
        assertThat(c.settle()).containsExactly(new Action.Validate(1));
        c.succeeded("validate/1");
        c.apply(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.INVALID, "x",
                null, List.of("w0", "w1"), List.of("w2"), List.of("w2: layer-4 differs"), c.now), c.now));
        c.now += 600_000;
        assertThat(c.settle()).isEmpty();
        assertThat(c.validated(1)).isEqualTo(WeightValidation.Status.INVALID);
    }

    /**
     * Issue 47: a model that failed validation never leaves the cluster stuck. INVALID is final for its epoch (the
     * cluster stays short of READY: another validation of the same weights would say the same), and draining the worker the
     * verdict names is the operator's way out: its stage is planned away to the spare in a new epoch, which is
     * validated afresh, and the cluster is READY again without it.
     */
    @Test
    void aStalledValidationIsMendedByDrainingTheWorkerItNames() {
        Cluster c = new Cluster();
        c.members.addAll(List.of(worker("w0", 0), worker("w1", 0), worker("w2", 0), worker("w3", 0)));
        for (Action.Assign a : only(c.settle(), Action.Assign.class)) {
            c.succeeded(a.key());
            c.apply(new ClusterCommand.LoadCompleted(a.node().nodeId(), 1, "c", c.now));
        }
        assertThat(c.settle()).containsExactly(new Action.Validate(1));
        String bad = c.state.pipeline().get(c.state.pipeline().size() - 1);
        c.succeeded("validate/1");
        c.apply(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.INVALID, "x", null,
                c.state.pipeline().stream().filter(n -> !n.equals(bad)).toList(), List.of(bad),
                List.of(bad + ": layer-4 differs"), c.now), c.now));
        c.now += 600_000;
        assertThat(c.settle()).as("final for the epoch").isEmpty();
        assertThat(c.state.system()).as("bootstrapping, never READY").isEqualTo(SystemState.BOOTSTRAPPING);
        assertThat(c.state.spares()).as("the spare stands by").singleElement().isNotEqualTo(bad);

        c.apply(new ClusterCommand.NodeDrainRequested(bad, c.now));
        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(2);
        assertThat(c.state.pipeline()).doesNotContain(bad).hasSize(3);
        c.loadAndValidate(due);
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        assertThat(c.validated(2)).isEqualTo(WeightValidation.Status.VALID);
    }

    @Test
    void aDrainedStageIsPlannedAwayAndTheNodeLeavesOnceTheNewPlanServes() {
        Cluster c = new Cluster();
        c.readyWith("w0", "w1", "w2", "w3");
        c.apply(new ClusterCommand.NodeDrainRequested("w2", c.now));
        List<Action> due = c.settle();
        assertThat(c.state.epoch()).isEqualTo(2);
        assertThat(c.state.plan(2).orElseThrow().reason()).startsWith("w2 drained: spare w3 takes");
        assertThat(c.state.pipeline()).doesNotContain("w2").contains("w3");
        assertThat(only(due, Action.Dismiss.class)).as("not before the new plan serves").isEmpty();

        c.loadAndValidate(due);
        assertThat(c.state.system()).isEqualTo(SystemState.READY);
        Predicate<Action> dismissW2 = a -> a instanceof Action.Dismiss d && d.node().nodeId().equals("w2");
        assertThat(c.settle()).filteredOn(dismissW2).singleElement()
                .satisfies(a -> assertThat(((Action.Dismiss) a).epoch()).isEqualTo(2));
        c.succeeded("dismiss/w2");
        c.members.removeIf(m -> m.nodeId().equals("w2")); // it left discovery too
        c.settle();
        assertThat(c.committed.get(c.committed.size() - 2)).isEqualTo(new ClusterCommand.NodeLeft("w2", "drained", c.now));
        assertThat(c.state.nodes()).doesNotContainKey("w2");
        assertThat(c.state.draining()).isEmpty();
    }

    @Test
    void aSpareDiscoveryNoLongerListsLeavesButNothingLeavesWhileDiscoveryCannotBeAsked() {
        Cluster c = new Cluster();
        c.readyWith("w0", "w1", "w2", "w3");
        c.members = null;
        assertThat(c.settle()).isEmpty();
        c.members = new ArrayList<>(List.of(worker("w0", 0), worker("w1", 0), worker("w2", 0)));
        c.settle();
        assertThat(c.state.nodes()).doesNotContainKey("w3");
        assertThat(c.state.pipeline()).containsExactly("w0", "w1", "w2");
        c.members.remove(1); // a stage gone from discovery is the failure detector's business, not this
        c.settle();
        assertThat(c.state.nodes()).containsKey("w1");
    }
}
