package io.butterfly.coordinator.simulation;

import io.butterfly.coordinator.inference.engine.PipelineRouter;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.MultiPipelinePlanner;
import io.butterfly.coordinator.planning.PartitionPlan;
import io.butterfly.coordinator.planning.PipelinesPlan;
import io.butterfly.coordinator.planning.PlannerKind;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.planning.WorkerCapacity;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;

/**
 * Aggregate throughput as pipelines are added (issue #52, docs/scale-out.md): {@code k} times a pipeline's workers are
 * planned by the real {@link MultiPipelinePlanner} (the count left to it), and requests from {@code k} times a
 * pipeline's clients are sent by the real {@link PipelineRouter} with the loads a coordinator gives it. Each
 * pipeline's stages are simulated on a simulated clock, using no CPU: a stage takes a micro-batch of the sequences
 * queued at it (the pipeline's running sequences over its stages, as the engine keeps one micro-batch in flight per
 * stage) and hands it on after its compute time, its weight bytes over its worker's rate (a decode step reads every
 * weight whatever the batch); after the last stage each sequence has a token (or, while prefilling, one more chunk of
 * its prompt) and queues at the first stage again. So a pipeline's rate is its running sequences over the time once
 * around its stages.
 *
 * <p>Closed loop: every client sends its next request as soon as its last one finished. The prompts share a few long
 * system prefixes, so the router's prefix affinity is at play against its load balance. What is reported is the
 * generated tokens per simulated second after a warm-up, against {@code k} times that of one pipeline.
 *
 * <p>Pipelines of different speeds ({@link #runMixed}): a pool of workers of random rates and memories is planned the
 * same way, so its pipelines differ in their number of stages and in their stages' times. Each pipeline's capacity is
 * what it generates alone under enough clients to keep its running limit full; then all of them serve together,
 * routed by the router, under as many clients per pipeline, against the sum of their capacities.
 */
public final class ServingSimulation {

    /**
     * @param workersPerPipeline workers of one pipeline's share of the pool (the model needs this many)
     * @param gflops             each worker's rate (identical workers: every pipeline alike, so "k of one" is exact)
     * @param clientsPerPipeline clients per pipeline's worth of workers, each with one request at a time
     * @param maxRunning         sequences a pipeline runs at once (its KV budget); the rest wait
     * @param promptTokens       a prompt: one of {@code systemPrompts} shared prefixes of this many tokens ...
     * @param userTokens         ... then this many tokens of its own
     * @param systemPrompts      shared prefixes the prompts start with
     * @param generated          tokens generated per request
     * @param chunkTokens        prompt tokens per prefill pass
     * @param warmupMs           simulated time before tokens are counted
     * @param measuredMs         simulated time over which they are
     * @param seed               of the prompts
     */
    public record Settings(int workersPerPipeline, double gflops, int clientsPerPipeline, int maxRunning,
                           int promptTokens, int userTokens, int systemPrompts, int generated, int chunkTokens,
                           long warmupMs, long measuredMs, long seed) {

        public static Settings of() {
            return new Settings(3, 50, 16, 32, 448, 64, 8, 128, 256, 30_000, 60_000, 52);
        }
    }

    /** One row: {@code pipelines} planned over {@code workers}, generating {@code tokensPerSecond}. */
    public record Row(int workers, int pipelines, double tokensPerSecond, long requests) {
    }

    /**
     * Pipelines of different speeds: each one's capacity (tokens/s alone, its running limit kept full) and what they
     * generate together, routed by the router, with as many clients per pipeline.
     */
    public record Mixed(int workers, List<Integer> stages, List<Double> capacities, double tokensPerSecond,
                        long requests) {

        public Mixed {
            stages = List.copyOf(stages);
            capacities = List.copyOf(capacities);
        }

        public int pipelines() {
            return capacities.size();
        }

        public double capacity() {
            return capacities.stream().mapToDouble(Double::doubleValue).sum();
        }

        /** Together against the sum of the capacities alone. */
        public double ratio() {
            return tokensPerSecond / capacity();
        }

        public double slowest() {
            return capacities.stream().mapToDouble(Double::doubleValue).min().orElse(0);
        }

        public double fastest() {
            return capacities.stream().mapToDouble(Double::doubleValue).max().orElse(0);
        }
    }

    private static final int BLOCK_TOKENS = 16;
    private static final int ROUTER_BLOCKS = 8_192;

    private final Settings settings;
    private final ModelFootprint model;

    public ServingSimulation(Settings settings, ModelFootprint model) {
        this.settings = settings;
        this.model = model;
    }

    /** Plans and serves the pool of {@code k} pipelines' worth of workers; what it generated. */
    public Row run(int k) {
        List<WorkerCapacity> pool = new ArrayList<>();
        long memory = memoryPerWorker();
        for (int i = 0; i < k * settings.workersPerPipeline(); i++) {
            pool.add(new WorkerCapacity(String.format(Locale.ROOT, "w%05d", i), settings.gflops(), memory));
        }
        List<double[]> pipelines = plan(pool);
        Run run = run(pipelines, k * settings.clientsPerPipeline());
        return new Row(pool.size(), pipelines.size(), run.counted * 1000.0 / settings.measuredMs(), run.requests);
    }

    /**
     * Plans and serves a pool of {@code workers} workers of different speeds (seeded): each one's rate drawn from
     * {@code [minGflops, maxGflops)}, its memory enough for a third or for a half of the model, so pipelines have two
     * or three stages. Each planned pipeline alone, then all together, with {@link #saturatingClients()} clients per
     * pipeline.
     */
    public Mixed runMixed(int workers, double minGflops, double maxGflops, long poolSeed) {
        Random random = new Random(poolSeed);
        long third = memoryPerWorker();
        long half = model.totalBytes(2) / 2 + model.totalBytes(2) / 40;
        List<WorkerCapacity> pool = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            pool.add(new WorkerCapacity(String.format(Locale.ROOT, "w%05d", i),
                    minGflops + random.nextDouble() * (maxGflops - minGflops), random.nextBoolean() ? third : half));
        }
        List<double[]> pipelines = plan(pool);
        int clients = saturatingClients();
        List<Double> capacities = new ArrayList<>();
        for (double[] p : pipelines) {
            capacities.add(run(List.of(p), clients).counted * 1000.0 / settings.measuredMs());
        }
        Run together = run(pipelines, clients * pipelines.size());
        return new Mixed(workers, pipelines.stream().map(p -> p.length).toList(), capacities,
                together.counted * 1000.0 / settings.measuredMs(), together.requests);
    }

    /** Clients per pipeline that keep its running limit full: half as many again waiting. */
    public int saturatingClients() {
        return settings.maxRunning() + settings.maxRunning() / 2;
    }

    /** The pool planned by the real planner (the count left to it, no spares): each pipeline's stage times. */
    private List<double[]> plan(List<WorkerCapacity> pool) {
        PipelinesPlan plan = new MultiPipelinePlanner(PlannerKind.OPTIMAL.create()).plan(model, pool, 0, 0);
        Map<String, WorkerCapacity> byId = new HashMap<>();
        pool.forEach(w -> byId.put(w.nodeId(), w));
        return plan.pipelines().stream().map(p -> stageMs(p, byId)).toList();
    }

    /** A closed-loop run of {@code clients} over pipelines of these stage times, served to its end. */
    private Run run(List<double[]> pipelines, int clients) {
        Run run = new Run(pipelines.stream().map(SimPipeline::new).toList(), clients);
        run.serve();
        return run;
    }

    /** Each worker's memory: a pipeline of {@code workersPerPipeline} of them just holds the model. */
    private long memoryPerWorker() {
        long need = model.totalBytes(settings.workersPerPipeline());
        return need / settings.workersPerPipeline() + (need / settings.workersPerPipeline()) / 20;
    }

    /** A stage's compute time per pass: the weights it reads (its layers, and the head on the last) over its rate. */
    private double[] stageMs(PartitionPlan p, Map<String, WorkerCapacity> byId) {
        double[] ms = new double[p.stages().size()];
        for (int i = 0; i < ms.length; i++) {
            StageAssignment s = p.stages().get(i);
            long bytes = s.hasHead() ? model.headBytes() : 0;
            for (int l = s.layerStart(); l < s.layerEnd(); l++) {
                bytes += model.layerWeightBytes(l);
            }
            ms[i] = bytes / (byId.get(s.nodeId()).gflops() * 1e9) * 1000;
        }
        return ms;
    }

    /** A request's sequence: its prompt, the passes its prefill still needs, the tokens it still has to generate. */
    private static final class Sequence {
        final long[] prompt;
        int prefillPasses;
        int left;

        Sequence(long[] prompt, int prefillPasses, int left) {
            this.prompt = prompt;
            this.prefillPasses = prefillPasses;
            this.left = left;
        }
    }

    /** One pipeline's stages: each a queue of sequences and whether it is computing a batch now. */
    private static final class SimPipeline {
        final double[] stageMs;
        final List<Deque<Sequence>> queued = new ArrayList<>();
        final boolean[] busy;
        final Deque<Sequence> waiting = new ArrayDeque<>();
        int running;

        SimPipeline(double[] stageMs) {
            this.stageMs = stageMs;
            this.busy = new boolean[stageMs.length];
            for (int i = 0; i < stageMs.length; i++) {
                queued.add(new ArrayDeque<>());
            }
        }
    }

    private record Event(double atMs, long seq, Runnable run) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            return atMs != o.atMs ? Double.compare(atMs, o.atMs) : Long.compare(seq, o.seq);
        }
    }

    /** One closed-loop run over planned pipelines. */
    private final class Run {
        final List<SimPipeline> pipelines;
        final int clients;
        final PipelineRouter router = new PipelineRouter(BLOCK_TOKENS, ROUTER_BLOCKS);
        final PriorityQueue<Event> events = new PriorityQueue<>();
        final Random random = new Random(settings.seed());
        final long[][] systems = new long[settings.systemPrompts()][];
        double now;
        long seq;
        long counted;
        long requests;

        Run(List<SimPipeline> pipelines, int clients) {
            this.pipelines = pipelines;
            this.clients = clients;
            for (int i = 0; i < systems.length; i++) {
                systems[i] = random.longs(settings.promptTokens(), 3, 32_000).toArray();
            }
        }

        void serve() {
            for (int c = 0; c < clients; c++) {
                send();
            }
            double end = settings.warmupMs() + settings.measuredMs();
            while (!events.isEmpty() && events.peek().atMs() <= end) {
                Event e = events.poll();
                now = e.atMs();
                e.run().run();
            }
        }

        /** A client's next request, routed as the coordinator routes it. */
        void send() {
            long[] system = systems[random.nextInt(systems.length)];
            long[] prompt = new long[system.length + settings.userTokens()];
            System.arraycopy(system, 0, prompt, 0, system.length);
            for (int i = system.length; i < prompt.length; i++) {
                prompt[i] = 3 + random.nextInt(32_000);
            }
            List<PipelineRouter.Load> loads = new ArrayList<>();
            for (SimPipeline p : pipelines) {
                loads.add(new PipelineRouter.Load(p.running + p.waiting.size(),
                        1 - (double) p.running / settings.maxRunning(), true));
            }
            SimPipeline p = pipelines.get(router.route(prompt, loads));
            requests++;
            p.waiting.add(new Sequence(prompt, (prompt.length + settings.chunkTokens() - 1) / settings.chunkTokens(),
                    settings.generated()));
            admit(p);
        }

        /** Waiting sequences start while the pipeline's running limit allows. */
        void admit(SimPipeline p) {
            while (p.running < settings.maxRunning() && !p.waiting.isEmpty()) {
                p.running++;
                p.queued.get(0).add(p.waiting.poll());
            }
            start(p, 0);
        }

        /** Stage {@code i}, if idle, computes a batch of what is queued at it. */
        void start(SimPipeline p, int i) {
            if (p.busy[i] || p.queued.get(i).isEmpty()) {
                return;
            }
            // A micro-batch: the running sequences split over the stages, so each stage has one to compute.
            int size = Math.max(1, (p.running + p.stageMs.length - 1) / p.stageMs.length);
            List<Sequence> batch = new ArrayList<>();
            while (batch.size() < size && !p.queued.get(i).isEmpty()) {
                batch.add(p.queued.get(i).poll());
            }
            p.busy[i] = true;
            at(now + p.stageMs[i], () -> {
                p.busy[i] = false;
                if (i + 1 < p.stageMs.length) {
                    p.queued.get(i + 1).addAll(batch);
                    start(p, i + 1);
                } else {
                    batch.forEach(s -> passed(p, s));
                    admit(p);
                }
                start(p, i);
            });
        }

        /** A sequence came out of the last stage: a prefill chunk done, or a token. */
        void passed(SimPipeline p, Sequence s) {
            if (s.prefillPasses > 1) {
                s.prefillPasses--;
                p.queued.get(0).add(s);
                return;
            }
            s.prefillPasses = 0;
            if (now > settings.warmupMs()) {
                counted++;
            }
            if (--s.left > 0) {
                p.queued.get(0).add(s);
                return;
            }
            p.running--;
            send();
        }

        void at(double atMs, Runnable run) {
            events.add(new Event(atMs, seq++, run));
        }
    }

    /**
     * Pools of workers of 20 to 80 GFLOP/s and two sizes of memory ({@link #runMixed}), one row each: its pipelines,
     * their capacities alone, and what they generate together against the sum.
     */
    public static void printMixed(ModelFootprint model, List<Integer> pools, long seed) {
        ServingSimulation sim = new ServingSimulation(Settings.of(), model);
        System.out.printf(Locale.ROOT, "pipelines of different speeds (workers of 20-80 GFLOP/s, memory for a third or"
                + " a half of the model; %d clients per pipeline):%n", sim.saturatingClients());
        System.out.println("workers  pipelines  stages  slowest_tokens_per_s  fastest_tokens_per_s"
                + "  sum_of_capacities  together_tokens_per_s  ratio_to_sum");
        for (int n : pools) {
            Mixed m = sim.runMixed(n, 20, 80, seed);
            System.out.printf(Locale.ROOT, "%7d  %9d  %6s  %20.1f  %20.1f  %17.1f  %21.1f  %12.3f%n", m.workers(),
                    m.pipelines(), m.stages().stream().mapToInt(Integer::intValue).min().orElse(0) + "-"
                            + m.stages().stream().mapToInt(Integer::intValue).max().orElse(0), m.slowest(),
                    m.fastest(), m.capacity(), m.tokensPerSecond(), m.ratio());
        }
    }

    /** The table's rows: one pipeline, then each count in {@code counts}, each against {@code k} times the first. */
    public static void print(ModelFootprint model, List<Integer> counts) {
        ServingSimulation sim = new ServingSimulation(Settings.of(), model);
        System.out.println("pipelines_planned  workers  tokens_per_s  tokens_per_s_per_pipeline  ratio_to_k_x_one");
        Row one = sim.run(1);
        List<Integer> all = new ArrayList<>(List.of(1));
        counts.stream().filter(k -> k > 1 && !all.contains(k)).forEach(all::add);
        for (int k : all) {
            Row r = k == 1 ? one : sim.run(k);
            System.out.printf(Locale.ROOT, "%17d  %7d  %12.1f  %25.2f  %16.3f%n", r.pipelines(), r.workers(),
                    r.tokensPerSecond(), r.tokensPerSecond() / r.pipelines(),
                    r.tokensPerSecond() / (k * one.tokensPerSecond()));
        }
    }
}
