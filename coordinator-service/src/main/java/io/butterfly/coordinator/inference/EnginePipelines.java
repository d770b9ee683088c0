package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.EngineCore;
import io.butterfly.coordinator.inference.engine.PipelineRouter;
import io.butterfly.coordinator.inference.engine.Sequence;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * One engine core per pipeline of the plan (docs/scale-out.md): each schedules its own sequences against its own
 * stages' KV budgets and sends them its own steps, so a pipeline that loses a stage pauses only its sequences. A new
 * request goes where the {@link PipelineRouter} says, and its sequence stays there; a request resumed after a failure
 * (a replay) is routed again, as a replay runs anywhere, unless its earlier sequence still leaves an engine. With one
 * pipeline this is the one engine core, as before.
 */
final class EnginePipelines implements AutoCloseable {

    /** A routed request not yet published in its engine's load counts in its queue this long (ns). */
    private static final long UNSEEN_NANOS = 2_000_000_000L;

    private final IntFunction<EngineCore> newEngine;
    private final PipelineRouter router;
    private final List<EngineCore> engines = new CopyOnWriteArrayList<>();
    /** Per pipeline: whether it takes steps now, as the replicated state last said. */
    private final List<Boolean> serving = new CopyOnWriteArrayList<>();
    /** Per pipeline: requests routed there (task id to when) that its engine has not published yet. */
    private final List<Map<String, Long>> unseen = new CopyOnWriteArrayList<>();
    /** What checks every engine's steps, those made later included. */
    private volatile EngineCore.StepAudit audit = EngineCore.StepAudit.NONE;

    /** @param newEngine the engine core of pipeline i */
    EnginePipelines(IntFunction<EngineCore> newEngine, PipelineRouter router) {
        this.newEngine = newEngine;
        this.router = router;
        engine(0);
    }

    /** The engine of pipeline {@code index}, made when first needed. */
    synchronized EngineCore engine(int index) {
        while (engines.size() <= index) {
            EngineCore made = newEngine.apply(engines.size());
            made.audit(audit);
            engines.add(made);
            serving.add(false);
            unseen.add(new ConcurrentHashMap<>());
        }
        return engines.get(index);
    }

    /** Every pipeline's steps are checked by {@code audit} from now on (docs/verified-execution.md#audits). */
    synchronized void audit(EngineCore.StepAudit audit) {
        this.audit = audit;
        engines.forEach(e -> e.audit(audit));
    }

    /** Pipelines known so far (engines made). */
    int pipelines() {
        return engines.size();
    }

    /** Pipeline {@code index} takes steps at {@code next}; its paused sequences resume there. */
    void serve(int index, EngineCore.Serving next) {
        engine(index).serve(next);
        serving.set(index, true);
    }

    /** Pipeline {@code index} does not serve now: its sequences wait, paused; new requests go elsewhere. */
    void hold(int index) {
        engine(index).hold();
        serving.set(index, false);
        router.forget(index); // planned anew next, perhaps on another first stage
    }

    /** Every pipeline holds (the cluster does not serve). */
    void holdAll() {
        for (int i = 0; i < engines.size(); i++) {
            hold(i);
        }
    }

    void submit(Sequence s) {
        submitAll(List.of(s));
    }

    /** Sequences that run together (one prompt's choices, or a list of prompts) go to one pipeline, all or none. */
    void submitAll(List<Sequence> all) {
        int p = route(all.get(0).prompt());
        placed(p, all);
        engines.get(p).submitAll(all);
    }

    /** A task carried on from its tokens so far: on the engine its earlier sequence still leaves, else routed anew. */
    void submitReplay(Sequence s) {
        int p = holding(s.id());
        if (p < 0) {
            p = route(s.prompt());
        }
        placed(p, List.of(s));
        engines.get(p).submitReplay(s);
    }

    /** Runs {@code action} with the task's sequence on the engine running it; null when none does. */
    <T> CompletableFuture<T> attach(String taskId, Function<Sequence, T> action) {
        int p = holding(taskId);
        return p < 0 ? CompletableFuture.completedFuture(null) : engines.get(p).attach(taskId, action);
    }

    /** Each engine checks the sequence is its own: the others ignore it. */
    void cancel(Sequence s, String reason) {
        engines.forEach(e -> e.cancel(s, reason));
    }

    void detach(Sequence s, String reason) {
        engines.forEach(e -> e.detach(s, reason));
    }

    void relinquish(String taskId, String to) {
        engines.forEach(e -> e.relinquish(taskId, to));
    }

    void releaseAbandoned(List<String> taskIds) {
        engines.forEach(e -> e.releaseAbandoned(taskIds));
    }

    /** What the engines last published, together (stages are distinct across pipelines). */
    EngineCore.Load load() {
        int running = 0;
        int waiting = 0;
        int paused = 0;
        Map<String, Double> kv = new HashMap<>();
        Set<String> tasks = new HashSet<>();
        for (EngineCore e : engines) {
            EngineCore.Load l = e.load();
            running += l.running();
            waiting += l.waiting();
            paused += l.paused();
            kv.putAll(l.kvCacheUsage());
            tasks.addAll(l.taskIds());
        }
        return new EngineCore.Load(running, waiting, paused, Map.copyOf(kv), Set.copyOf(tasks));
    }

    /** Each pipeline's load as the router weighs it, in pipeline order. */
    List<PipelineRouter.Load> loads() {
        List<PipelineRouter.Load> out = new ArrayList<>();
        long now = System.nanoTime();
        for (int i = 0; i < engines.size(); i++) {
            EngineCore.Load l = engines.get(i).load();
            Map<String, Long> routed = unseen.get(i);
            routed.entrySet().removeIf(e -> l.taskIds().contains(e.getKey()) || now - e.getValue() > UNSEEN_NANOS);
            double fullest = l.kvCacheUsage().values().stream().mapToDouble(Double::doubleValue).max().orElse(0);
            out.add(new PipelineRouter.Load(l.running() + l.waiting() + routed.size(), 1 - fullest, serving.get(i)));
        }
        return out;
    }

    /** The pipeline for a new request: the router's choice; pipeline 0 when none serves (it waits there, held). */
    private int route(long[] prompt) {
        if (engines.size() == 1) {
            return 0;
        }
        return Math.max(0, router.route(prompt, loads()));
    }

    private void placed(int pipeline, List<Sequence> sequences) {
        long now = System.nanoTime();
        sequences.forEach(s -> unseen.get(pipeline).put(s.id(), now));
    }

    /** The pipeline whose engine runs {@code taskId} (as last published, or just routed there), or -1. */
    private int holding(String taskId) {
        for (int i = 0; i < engines.size(); i++) {
            if (engines.get(i).load().taskIds().contains(taskId) || unseen.get(i).containsKey(taskId)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public void close() {
        engines.forEach(EngineCore::close);
    }
}
