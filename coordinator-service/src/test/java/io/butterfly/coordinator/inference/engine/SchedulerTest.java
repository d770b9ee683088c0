package io.butterfly.coordinator.inference.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SchedulerTest {

    private static SchedulerSettings settings(int maxSeqs, int budget, int chunk, int maxWaiting, int microBatches) {
        return new SchedulerSettings(maxSeqs, budget, chunk, maxWaiting, microBatches);
    }

    private static Sequence seq(String id, int prompt, int maxTokens) {
        return new Sequence(id, new long[prompt], maxTokens, DECODING, SequenceOutputs.NONE);
    }

    /** Decoding that never ends a sequence early: it ends at max_tokens. */
    private static final Sequence.Decoding DECODING = new Sequence.Decoding(null, new io.butterfly.common.model.ModelConfig(
            io.butterfly.common.model.Architecture.LLAMA, 2, 16, 2, 2, 32, 512, 64, 1e-5, 10000.0, false, 1, 2), true);

    @Test
    void aMicroBatchCarriesTheRunningDecodesAndPromptChunksUnderTheTokenBudget() {
        Scheduler s = new Scheduler(settings(2, 6, 4, 8, 1));
        Sequence a = seq("a", 2, 5);
        Sequence b = seq("b", 9, 5);
        s.add(a);
        s.add(b);

        MicroBatch first = s.next();
        // a's whole prompt (2), then b's first chunk, which ends at the chunk boundary 4.
        assertThat(first.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens, Chunk::samples)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("a", 0, 2, true),
                        org.assertj.core.groups.Tuple.tuple("b", 0, 4, false));
        assertThat(s.next()).as("both are in flight").isNull();
        s.stepped(first);

        MicroBatch second = s.next();
        assertThat(second.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens, Chunk::samples)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("a", 2, 1, true),
                        org.assertj.core.groups.Tuple.tuple("b", 4, 4, false));
        s.stepped(second);
        MicroBatch third = s.next();
        assertThat(third.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens, Chunk::samples)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("a", 3, 1, true),
                        org.assertj.core.groups.Tuple.tuple("b", 8, 1, true));
    }

    @Test
    void aPromptIsCutAtTheSameBoundariesWhateverItIsBatchedWith() {
        Random random = new Random(3);
        for (int round = 0; round < 200; round++) {
            int chunk = 1 + random.nextInt(16);
            int prompt = 1 + random.nextInt(100);
            List<Integer> alone = cuts(new Scheduler(settings(16, chunk + 16 + random.nextInt(40), chunk, 16, 1)), prompt,
                    0, random);
            List<Integer> crowded = cuts(new Scheduler(settings(16, chunk + 16 + random.nextInt(40), chunk, 16, 1)), prompt,
                    1 + random.nextInt(10), random);
            assertThat(crowded).as("prompt %d, chunk %d", prompt, chunk).isEqualTo(alone);
            for (int i = 0; i < alone.size() - 1; i++) {
                assertThat(alone.get(i) % chunk).isZero();
            }
            assertThat(alone.get(alone.size() - 1)).isEqualTo(prompt);
        }
    }

    /** Where the prompt of one sequence, run among {@code others} random ones, is cut (each chunk's end). */
    private static List<Integer> cuts(Scheduler s, int prompt, int others, Random random) {
        for (int i = 0; i < others; i++) {
            s.add(seq("o" + i, 1 + random.nextInt(60), 1 + random.nextInt(5)));
        }
        Sequence target = seq("target", prompt, 3);
        s.add(target);
        List<Integer> ends = new ArrayList<>();
        while (target.prefilling()) {
            MicroBatch b = s.next();
            for (Chunk c : b.chunks()) {
                if (c.sequence() == target) {
                    ends.add(c.position() + c.numTokens());
                }
            }
            s.stepped(b);
        }
        return ends;
    }

    @Test
    void aLongPromptDelaysTheRunningDecodesByAtMostOneChunk() {
        Scheduler s = new Scheduler(settings(8, 20, 8, 8, 1));
        List<Sequence> decoding = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            Sequence d = seq("d" + i, 1, 100);
            decoding.add(d);
            s.add(d);
        }
        s.stepped(s.next()); // their prompts: all decoding now
        s.add(seq("long", 500, 5));
        for (int step = 0; step < 20; step++) {
            MicroBatch b = s.next();
            assertThat(b.chunks()).extracting(Chunk::sequence).containsAll(decoding);
            int prefill = b.chunks().stream().filter(c -> c.sequence().id().equals("long")).mapToInt(Chunk::numTokens).sum();
            assertThat(prefill).isLessThanOrEqualTo(8);
            assertThat(b.tokens()).isLessThanOrEqualTo(20);
            s.stepped(b);
        }
    }

    @Test
    void sequencesStartFirstComeFirstServedAndOneThatDoesNotFitHoldsTheQueue() {
        Scheduler s = new Scheduler(settings(8, 100, 16, 8, 1));
        // One stage of 100 bytes; a sequence takes a byte per position it may reach.
        s.pipeline(new KvBudgets(List.of(new KvBudgets.Stage("w", 100, positions -> positions))), 1);
        Sequence big = seq("big", 10, 60);      // 70
        Sequence bigger = seq("bigger", 10, 40); // 50: does not fit beside big
        Sequence small = seq("small", 2, 3);     // 5: would fit, but waits its turn
        s.add(big);
        s.add(bigger);
        s.add(small);

        MicroBatch b = s.next();
        assertThat(b.chunks()).extracting(c -> c.sequence().id()).containsExactly("big");
        assertThat(s.waiting()).isEqualTo(2);
        assertThat(s.budgets().used("w")).isEqualTo(70);
        s.stepped(b);
        s.remove(big); // finished: its reservation is free
        assertThat(s.budgets().used("w")).isZero();
        assertThat(s.next().chunks()).extracting(c -> c.sequence().id()).containsExactly("bigger", "small");
    }

    @Test
    void aSequenceNoStageCouldHoldIsNamedBeforeItIsQueued() {
        KvBudgets budgets = new KvBudgets(List.of(new KvBudgets.Stage("w1", 1_000, p -> p),
                new KvBudgets.Stage("w2", 100, p -> 2L * p), new KvBudgets.Stage("unknown", 0, p -> p)));
        assertThat(budgets.neverFits(50)).isNull();
        assertThat(budgets.neverFits(51).nodeId()).isEqualTo("w2");
    }

    @Test
    void theQueueIsBounded() {
        Scheduler s = new Scheduler(settings(1, 5, 4, 2, 1));
        s.add(seq("a", 1, 1));
        s.add(seq("b", 1, 1));
        assertThatThrownBy(() -> s.add(seq("c", 1, 1))).isInstanceOf(QueueFullException.class)
                .hasMessageContaining("max-waiting");
        s.next(); // a starts: a place in the queue is free
        s.add(seq("c", 1, 1));
        assertThat(s.waiting()).isEqualTo(2);
        assertThat(s.running()).isEqualTo(1);
    }

    @Test
    void aSequenceRemovedWhileWaitingOrRunningLeavesAndFreesItsReservation() {
        Scheduler s = new Scheduler(settings(4, 10, 4, 4, 1));
        s.pipeline(new KvBudgets(List.of(new KvBudgets.Stage("w", 100, p -> p))), 1);
        Sequence a = seq("a", 2, 3);
        Sequence b = seq("b", 2, 3);
        s.add(a);
        s.add(b);
        s.stepped(s.next());
        s.remove(a);
        assertThat(s.running()).isEqualTo(1);
        assertThat(s.budgets().used("w")).isEqualTo(5);
        Sequence c = seq("c", 2, 3);
        s.add(c);
        s.remove(c); // a client gone before it started
        assertThat(s.waiting()).isZero();
        assertThat(s.next().chunks()).extracting(Chunk::sequence).containsExactly(b);
    }

    @Test
    void severalMicroBatchesInFlightShareTheRunningDecodesAndNeverCarryASequenceTwice() {
        Scheduler s = new Scheduler(settings(32, 64, 16, 32, 0));
        s.pipeline(KvBudgets.unlimited(), 3);
        for (int i = 0; i < 16; i++) {
            s.add(seq("s" + i, 4, 50));
        }
        s.stepped(s.next()); // every prompt
        List<MicroBatch> inFlight = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            inFlight.add(s.next());
        }
        assertThat(inFlight).extracting(b -> b.chunks().size()).containsExactly(6, 6, 4);
        Set<String> carried = new HashSet<>();
        inFlight.forEach(b -> b.chunks().forEach(c -> assertThat(carried.add(c.sequence().id())).isTrue()));
        assertThat(s.next()).isNull();
        s.stepped(inFlight.get(0));
        assertThat(s.next().chunks()).extracting(Chunk::sequence).containsExactlyElementsOf(
                inFlight.get(0).chunks().stream().map(Chunk::sequence).toList());
    }

    /**
     * Random arrivals, prompt lengths, token counts and completion orders, with several micro-batches in flight: the
     * budget and the KV reservations always hold, no sequence is in two micro-batches, sequences start in arrival
     * order, and every one finishes.
     */
    @Test
    void anyMixOfRequestsRunsToTheEndWithinItsLimits() {
        Random random = new Random(11);
        for (int round = 0; round < 50; round++) {
            int chunk = 1 + random.nextInt(32);
            int maxSeqs = 1 + random.nextInt(12);
            int budget = chunk + maxSeqs + random.nextInt(64);
            int microBatches = 1 + random.nextInt(4);
            long kv = 200 + random.nextInt(400);
            Scheduler s = new Scheduler(settings(maxSeqs, budget, chunk, 1_000, microBatches));
            s.pipeline(new KvBudgets(List.of(new KvBudgets.Stage("w", kv, p -> p))), microBatches);
            Map<Sequence, Integer> remaining = new HashMap<>();
            List<String> arrived = new ArrayList<>();
            List<String> started = new ArrayList<>();
            Deque<MicroBatch> inFlight = new ArrayDeque<>();
            int toArrive = 10 + random.nextInt(30);
            int n = 0;
            for (int tick = 0; tick < 100_000 && (toArrive > 0 || !remaining.isEmpty()); tick++) {
                if (toArrive > 0 && random.nextInt(3) == 0) {
                    int maxTokens = 1 + random.nextInt(20);
                    Sequence q = seq("q" + n++, 1 + random.nextInt(Math.min(120, (int) kv - maxTokens)), maxTokens);
                    s.add(q);
                    arrived.add(q.id());
                    remaining.put(q, maxTokens);
                    toArrive--;
                }
                while (inFlight.size() < s.microBatches()) {
                    MicroBatch b = s.next();
                    if (b == null) {
                        break;
                    }
                    assertThat(b.tokens()).isLessThanOrEqualTo(budget);
                    for (Chunk c : b.chunks()) {
                        assertThat(inFlight.stream().flatMap(f -> f.chunks().stream()).map(Chunk::sequence))
                                .doesNotContain(c.sequence());
                        if (c.position() == 0) {
                            started.add(c.sequence().id());
                        }
                    }
                    inFlight.add(b);
                }
                assertThat(s.budgets().used("w")).isLessThanOrEqualTo(kv);
                if (!inFlight.isEmpty() && random.nextBoolean()) {
                    MicroBatch done = random.nextBoolean() ? inFlight.pollFirst() : inFlight.pollLast();
                    s.stepped(done);
                    for (Chunk c : done.chunks()) {
                        if (c.samples() && remaining.merge(c.sequence(), -1, Integer::sum) == 0) {
                            remaining.remove(c.sequence());
                            s.remove(c.sequence());
                        }
                    }
                }
            }
            assertThat(remaining).as("round %d: every sequence finished", round).isEmpty();
            assertThat(started).as("first come, first served").isEqualTo(arrived);
            assertThat(s.budgets().used("w")).isZero();
        }
    }

    /**
     * A paused sequence keeps its KV reservation and is not scheduled; resumed, it replays its history on a new attempt
     * cut exactly as the first time (prompt chunks at the same boundaries, then one generated token per step, several
     * in flight one behind the other), then samples and decodes one step at a time again.
     */
    @Test
    void aResumedSequenceReplaysItsHistoryCutAsTheFirstTimeWithStepsInFlightBehindEachOther() {
        Scheduler s = new Scheduler(settings(4, 64, 4, 8, 3));
        s.pipeline(new KvBudgets(List.of(new KvBudgets.Stage("w", 100, p -> p))), 3);
        Sequence a = seq("a", 6, 10);
        s.add(a);
        List<List<Integer>> first = new ArrayList<>();
        for (int generated = 0; generated < 3; ) { // its prompt, then decodes until 3 tokens are chosen
            MicroBatch b = s.next();
            Chunk c = b.chunks().get(0);
            first.add(List.of(c.position(), c.numTokens()));
            assertThat(s.next()).as("one step at a time").isNull();
            s.stepped(b);
            if (c.samples()) {
                a.append(7, last -> false);
                generated++;
            }
        }
        MicroBatch failed = s.next(); // feeds the third token: lost with a stage
        s.stepFailed(failed);
        assertThat(s.pause(a, 1, new IllegalStateException("stage lost"))).as("its first pause").isTrue();
        assertThat(s.next()).as("paused").isNull();
        assertThat(s.budgets().used("w")).as("its reservation stays").isEqualTo(16);
        assertThat(s.running()).isEqualTo(1);

        s.resume(a); // its history: the prompt and the 3 tokens
        assertThat(a.stalled()).as("it waits to generate again until it samples").isTrue();
        assertThat(a.attempt()).isEqualTo(1);
        Deque<MicroBatch> inFlight = new ArrayDeque<>();
        List<List<Integer>> cuts = new ArrayList<>();
        List<Boolean> samples = new ArrayList<>();
        int mostInFlight = 0;
        do { // as the engine runs it: up to three micro-batches in flight, answered in order
            for (MicroBatch b = null; inFlight.size() < s.microBatches() && (b = s.next()) != null; ) {
                inFlight.add(b);
            }
            mostInFlight = Math.max(mostInFlight, inFlight.size());
            MicroBatch b = inFlight.poll();
            Chunk c = b.chunks().get(0);
            assertThat(c.attempt()).isEqualTo(1);
            cuts.add(List.of(c.position(), c.numTokens()));
            samples.add(c.samples());
            s.stepped(b);
        } while (!inFlight.isEmpty() || a.replaying());
        assertThat(mostInFlight).as("its steps go one behind the other").isEqualTo(3);
        assertThat(cuts).as("the first time's cuts, and the step feeding the third token").isEqualTo(
                java.util.stream.Stream.concat(first.stream(), java.util.stream.Stream.of(List.of(8, 1))).toList());
        assertThat(samples).as("only the last replayed step samples").containsExactly(false, false, false, false, true);
        MicroBatch decode = s.next();
        assertThat(decode.chunks().get(0).position()).isEqualTo(9);
        assertThat(s.next()).as("decoding: one step at a time again").isNull();

        s.stepped(failed); // a step of the attempt given up, answered late: nothing changes
        assertThat(a.computed()).isEqualTo(9);
        s.remove(a);
        assertThat(s.budgets().used("w")).isZero();
    }

    /**
     * Sequences submitted together with one prompt (a request's choices): the first feeds it, the others wait (a
     * sequence with another prompt does not) and feed theirs once the first's is answered, so the stages' prefix caches
     * hold its blocks; one whose leader was paused or left does not wait. Short prompts hold no block: no waiting.
     */
    @Test
    void choicesWithOnePromptFeedItAfterTheFirstsIsCached() {
        Scheduler s = new Scheduler(settings(8, 264, 256, 8, 1));
        long[] prompt = new Random(51).longs(40, 3, 300).toArray();
        List<Sequence> choices = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            choices.add(new Sequence("c" + i, prompt.clone(), 4, DECODING, SequenceOutputs.NONE));
        }
        Sequence other = seq("other", 40, 4);
        List<Sequence> submitted = new ArrayList<>(choices);
        submitted.add(other);
        PromptLeaders.assign(submitted);
        submitted.forEach(s::add);

        MicroBatch first = s.next();
        assertThat(first.chunks()).extracting(c -> c.sequence().id()).containsExactly("c0", "other");
        assertThat(s.next()).as("c1 and c2 wait for c0's prompt").isNull();
        s.stepped(first);
        MicroBatch second = s.next();
        assertThat(second.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("c0", 40, 1),
                        org.assertj.core.groups.Tuple.tuple("c1", 0, 40), org.assertj.core.groups.Tuple.tuple("c2", 0, 40),
                        org.assertj.core.groups.Tuple.tuple("other", 40, 1));

        // a leader paused before its prompt was answered holds no one back
        Scheduler paused = new Scheduler(settings(8, 264, 256, 8, 1));
        List<Sequence> again = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            again.add(new Sequence("p" + i, prompt.clone(), 4, DECODING, SequenceOutputs.NONE));
        }
        PromptLeaders.assign(again);
        again.forEach(paused::add);
        MicroBatch lost = paused.next();
        assertThat(lost.chunks()).extracting(c -> c.sequence().id()).containsExactly("p0");
        paused.stepFailed(lost);
        paused.pause(again.get(0), 1, new IllegalStateException("stage lost"));
        assertThat(paused.next().chunks()).extracting(c -> c.sequence().id()).containsExactly("p1");

        // prompts too short for a block: side by side
        Scheduler shortPrompts = new Scheduler(settings(8, 264, 256, 8, 1));
        List<Sequence> small = List.of(seq("s0", 16, 4), seq("s1", 16, 4));
        PromptLeaders.assign(small);
        small.forEach(shortPrompts::add);
        assertThat(shortPrompts.next().chunks()).extracting(c -> c.sequence().id()).containsExactly("s0", "s1");
    }

    /** Feeds {@code seq}'s prompt alone to the end, step by step, then removes it: each chunk's (position, tokens). */
    private static List<List<Integer>> feedPrompt(Scheduler s, Sequence seq) {
        s.add(seq);
        List<List<Integer>> cuts = new ArrayList<>();
        while (seq.prefilling()) {
            MicroBatch b = s.next();
            for (Chunk c : b.chunks()) {
                if (c.sequence() == seq) {
                    cuts.add(List.of(c.position(), c.numTokens()));
                }
            }
            s.stepped(b);
        }
        s.remove(seq);
        return cuts;
    }

    /**
     * A prompt whose first K tokens every stage answered lately (so holds in its prefix cache) goes in one step, from 0
     * to the chunk boundary after K, and the token budget counts only the tokens computed (the rest of the prompt, its
     * last partial block, or the last full one, left to compute); without prefix caches on every stage, or once a step
     * failed (a stage may have lost its cache), it is cut as usual.
     */
    @Test
    void aCachedPrefixGoesInOneStepAndTheBudgetCountsOnlyTheTokensComputed() {
        long[] system = new Random(7).longs(1032, 3, 30000).toArray();
        Scheduler s = new Scheduler(settings(4, 300, 256, 8, 1));
        s.prefixCaching(() -> true);
        assertThat(feedPrompt(s, new Sequence("first", system.clone(), 1, DECODING, SequenceOutputs.NONE)))
                .as("nothing cached yet: five chunks").containsExactly(List.of(0, 256), List.of(256, 256),
                        List.of(512, 256), List.of(768, 256), List.of(1024, 8));

        Sequence hit = new Sequence("hit", system.clone(), 1, DECODING, SequenceOutputs.NONE);
        Sequence fresh = seq("fresh", 256, 1);
        s.add(hit);
        s.add(fresh);
        MicroBatch both = s.next();
        // 1,032 + 256 positions in a budget of 300: the hit computes 8 (64 blocks restored), the fresh prompt 256.
        assertThat(both.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens, Chunk::samples)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("hit", 0, 1032, true),
                        org.assertj.core.groups.Tuple.tuple("fresh", 0, 256, true));
        s.stepped(both);

        // A shared first 600 tokens: 37 blocks (592) restored, the step goes to the chunk boundary 768 and computes 176.
        long[] half = new Random(8).longs(1032, 3, 30000).toArray();
        System.arraycopy(system, 0, half, 0, 600);
        Scheduler budgeted = new Scheduler(settings(4, 300, 256, 8, 1));
        budgeted.prefixCaching(() -> true);
        feedPrompt(budgeted, new Sequence("first", system.clone(), 1, DECODING, SequenceOutputs.NONE));
        Sequence partial = new Sequence("partial", half, 1, DECODING, SequenceOutputs.NONE);
        Sequence over = seq("over", 125, 1); // 176 + 125 > 300: it waits for the next step
        budgeted.add(partial);
        budgeted.add(over);
        MicroBatch one = budgeted.next();
        assertThat(one.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("partial", 0, 768));
        budgeted.stepped(one);
        MicroBatch two = budgeted.next(); // its blocks up to 768 answered: nothing ahead is cached, a usual chunk
        assertThat(two.chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("partial", 768, 256));
        budgeted.stepped(two);
        assertThat(budgeted.next().chunks()).extracting(c -> c.sequence().id(), Chunk::position, Chunk::numTokens)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("partial", 1024, 8),
                        org.assertj.core.groups.Tuple.tuple("over", 0, 125));

        // Stages not all keeping prefix caches: cut as usual.
        Scheduler off = new Scheduler(settings(4, 300, 256, 8, 1));
        feedPrompt(off, new Sequence("first", system.clone(), 1, DECODING, SequenceOutputs.NONE));
        assertThat(feedPrompt(off, new Sequence("again", system.clone(), 1, DECODING, SequenceOutputs.NONE)))
                .hasSize(5);
        // A failed step: a stage may have restarted with an empty cache.
        Scheduler failed = new Scheduler(settings(4, 300, 256, 8, 1));
        failed.prefixCaching(() -> true);
        feedPrompt(failed, new Sequence("first", system.clone(), 1, DECODING, SequenceOutputs.NONE));
        Sequence lost = seq("lost", 20, 1);
        failed.add(lost);
        failed.stepFailed(failed.next());
        failed.remove(lost);
        assertThat(feedPrompt(failed, new Sequence("again", system.clone(), 1, DECODING, SequenceOutputs.NONE)))
                .hasSize(5);
    }

    /**
     * Seeded random prompts sharing random prefixes with ones fed before, chunk sizes and budgets: each step's tokens
     * to compute (its positions less the whole cached blocks it starts with, as a stage's lookup restores them, its
     * last token always computed) stay within the budget and each chunk's at most a prefill chunk; a hit's first step
     * reaches the chunk boundary after its cached blocks (at most {@code MAX_HIT_CHUNKS} chunks); every prompt is fed
     * whole, in order.
     */
    @Test
    void withCachedPrefixesEveryStepComputesWithinTheBudget() {
        Random random = new Random(51);
        for (int round = 0; round < 100; round++) {
            int chunk = 16 * (1 + random.nextInt(8));
            int budget = chunk + 8 + random.nextInt(200);
            Scheduler s = new Scheduler(settings(8, budget, chunk, 64, 1));
            s.prefixCaching(() -> true);
            long[] base = random.longs(200 + random.nextInt(2000), 3, 30000).toArray();
            feedPrompt(s, new Sequence("base", base.clone(), 1, DECODING, SequenceOutputs.NONE));
            Map<Sequence, Integer> shared = new HashMap<>();
            for (int i = 0; i < 6; i++) {
                int length = 1 + random.nextInt(base.length + 100);
                long[] prompt = random.longs(length, 30000, 60000).toArray(); // unlike base's tokens after the share
                int share = Math.min(length, random.nextInt(base.length + 1));
                System.arraycopy(base, 0, prompt, 0, share);
                Sequence q = new Sequence("q" + i, prompt, 1, DECODING, SequenceOutputs.NONE);
                shared.put(q, share);
                s.add(q);
            }
            Map<Sequence, Integer> fedTo = new HashMap<>();
            for (MicroBatch b; (b = s.next()) != null; ) {
                int computed = 0;
                for (Chunk c : b.chunks()) {
                    Sequence q = c.sequence();
                    if (c.position() >= q.promptLength()) {
                        computed += c.numTokens();
                        continue;
                    }
                    assertThat(c.position()).isEqualTo(fedTo.getOrDefault(q, 0));
                    fedTo.put(q, c.position() + c.numTokens());
                    int cached = c.position() % 16 == 0 && c.numTokens() > 16 // what a stage restores
                            ? Math.min(Math.max(0, Math.min(shared.get(q), q.promptLength() - 1) / 16 * 16
                            - c.position()), (c.numTokens() - 1) / 16 * 16) : 0;
                    int mine = c.numTokens() - cached;
                    assertThat(mine).as("round %d", round).isLessThanOrEqualTo(chunk);
                    computed += mine;
                    int blocks = Math.min(shared.get(q), q.promptLength() - 1) / 16 * 16;
                    if (c.position() == 0 && blocks > 0) {
                        int reach = Math.min(blocks, (Sequence.MAX_HIT_CHUNKS - 1) * chunk);
                        assertThat(c.position() + c.numTokens()).as("round %d: a hit's first step", round)
                                .isEqualTo(Math.min(q.promptLength(), (reach / chunk + 1) * chunk));
                    }
                }
                assertThat(computed).as("round %d", round).isLessThanOrEqualTo(budget);
                s.stepped(b);
                b.chunks().stream().filter(Chunk::samples).forEach(c -> s.remove(c.sequence())); // prompt fed
            }
            shared.keySet().forEach(q -> assertThat(fedTo.get(q)).isEqualTo(q.promptLength()));
        }
    }
}
