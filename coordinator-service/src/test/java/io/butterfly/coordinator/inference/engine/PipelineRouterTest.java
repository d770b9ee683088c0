package io.butterfly.coordinator.inference.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The router's choices: load, free KV cache and cached prefixes, on seeded random prompts and loads. */
class PipelineRouterTest {

    private static final int BLOCK = 16;

    private static long[] prompt(Random r, int length) {
        long[] out = new long[length];
        for (int i = 0; i < length; i++) {
            out[i] = r.nextInt(32_000);
        }
        return out;
    }

    private static long[] extend(long[] prefix, long[] suffix) {
        long[] out = java.util.Arrays.copyOf(prefix, prefix.length + suffix.length);
        System.arraycopy(suffix, 0, out, prefix.length, suffix.length);
        return out;
    }

    @Test
    void aPipelineThatDoesNotServeIsNeverChosenAndNoneServingGivesNone() {
        Random r = new Random(52);
        PipelineRouter router = new PipelineRouter(BLOCK, 1024);
        for (int i = 0; i < 200; i++) {
            List<PipelineRouter.Load> loads = new ArrayList<>();
            int k = 1 + r.nextInt(5);
            for (int p = 0; p < k; p++) {
                loads.add(new PipelineRouter.Load(r.nextInt(20), r.nextDouble(), r.nextBoolean()));
            }
            int chosen = router.route(prompt(r, 1 + r.nextInt(100)), loads);
            if (loads.stream().noneMatch(PipelineRouter.Load::serving)) {
                assertThat(chosen).isEqualTo(-1);
            } else {
                assertThat(loads.get(chosen).serving()).isTrue();
            }
        }
    }

    @Test
    void withoutCachedPrefixesTheLeastQueuedPipelineIsChosenThenTheOneWithMoreFreeKv() {
        Random r = new Random(7);
        for (int i = 0; i < 300; i++) {
            PipelineRouter router = new PipelineRouter(BLOCK, 1024); // fresh: nothing cached anywhere
            int k = 2 + r.nextInt(4);
            List<PipelineRouter.Load> loads = new ArrayList<>();
            for (int p = 0; p < k; p++) {
                loads.add(new PipelineRouter.Load(r.nextInt(4), 0.5, true));
            }
            int chosen = router.route(prompt(r, 64), loads);
            int least = loads.stream().mapToInt(PipelineRouter.Load::queued).min().orElseThrow();
            assertThat(loads.get(chosen).queued()).isEqualTo(least);
            assertThat(chosen).isEqualTo(loads.indexOf(loads.stream().filter(l -> l.queued() == least).findFirst()
                    .orElseThrow())); // ties go to the lower index
        }
        PipelineRouter router = new PipelineRouter(BLOCK, 1024);
        assertThat(router.route(new long[] {1, 2, 3}, List.of(new PipelineRouter.Load(1, 0.1, true),
                new PipelineRouter.Load(1, 0.9, true)))).isEqualTo(1);
    }

    @Test
    void concurrentDistinctRequestsSpreadEvenlyOverEqualPipelines() {
        Random r = new Random(16);
        PipelineRouter router = new PipelineRouter(BLOCK, 4096);
        int[] queued = new int[2];
        for (int i = 0; i < 16; i++) {
            int chosen = router.route(prompt(r, 128), List.of(new PipelineRouter.Load(queued[0], 1, true),
                    new PipelineRouter.Load(queued[1], 1, true)));
            queued[chosen]++;
        }
        assertThat(queued).containsExactly(8, 8);
    }

    @Test
    void aPromptSharingACachedPrefixFollowsItUnlessThatPipelineIsFarMoreLoaded() {
        Random r = new Random(99);
        for (int i = 0; i < 100; i++) {
            PipelineRouter router = new PipelineRouter(BLOCK, 4096);
            long[] system = prompt(r, BLOCK * (4 + r.nextInt(8)));
            List<PipelineRouter.Load> idle = List.of(new PipelineRouter.Load(0, 1, true),
                    new PipelineRouter.Load(0, 1, true), new PipelineRouter.Load(0, 1, true));
            int first = router.route(system, idle);
            assertThat(router.cachedPrefixTokens(first, system)).isEqualTo(system.length);
            long[] follow = extend(system, prompt(r, 1 + r.nextInt(BLOCK)));
            // One more queued there than elsewhere: the prefix still wins.
            List<PipelineRouter.Load> busier = new ArrayList<>(idle);
            busier.set(first, new PipelineRouter.Load(1, 1, true));
            assertThat(router.route(follow, busier)).isEqualTo(first);
            // Everything queued there: another pipeline takes it.
            List<PipelineRouter.Load> swamped = new ArrayList<>(idle);
            swamped.set(first, new PipelineRouter.Load(30, 0.2, true));
            assertThat(router.route(extend(system, prompt(r, 5)), swamped)).isNotEqualTo(first);
        }
    }

    /**
     * Many pipelines, a few shared system prompts: the pipelines that cached a prompt do not take every request that
     * shares it (a queue is weighed against the mean queue, which does not shrink as pipelines are added).
     */
    @Test
    void withManyPipelinesAFewSharedPrefixesStillSpreadTheRequests() {
        Random r = new Random(33);
        for (int k : new int[] {2, 8, 33, 100}) {
            PipelineRouter router = new PipelineRouter(BLOCK, 8192);
            long[][] systems = new long[8][];
            for (int i = 0; i < systems.length; i++) {
                systems[i] = prompt(r, BLOCK * 28);
            }
            int[] queued = new int[k];
            for (int i = 0; i < 16 * k; i++) {
                List<PipelineRouter.Load> loads = new ArrayList<>();
                for (int q : queued) {
                    loads.add(new PipelineRouter.Load(q, 1, true));
                }
                queued[router.route(extend(systems[r.nextInt(systems.length)], prompt(r, 64)), loads)]++;
            }
            int max = java.util.Arrays.stream(queued).max().orElseThrow();
            int min = java.util.Arrays.stream(queued).min().orElseThrow();
            assertThat(max).as("%d pipelines: %s", k, java.util.Arrays.toString(queued)).isLessThanOrEqualTo(32);
            assertThat(min).as("%d pipelines: %s", k, java.util.Arrays.toString(queued)).isGreaterThanOrEqualTo(1);
        }
    }

    @Test
    void onlyWholeBlocksOfTheSamePrefixCountAndTheOldestBlocksAreForgotten() {
        Random r = new Random(3);
        PipelineRouter router = new PipelineRouter(BLOCK, 8);
        List<PipelineRouter.Load> one = List.of(new PipelineRouter.Load(0, 1, true));
        long[] a = prompt(r, BLOCK * 4 + 5);
        assertThat(router.route(a, one)).isZero();
        assertThat(router.cachedPrefixTokens(0, a)).isEqualTo(BLOCK * 4);
        long[] diverging = a.clone();
        diverging[BLOCK * 2 + 3]++; // the third block differs: two blocks shared
        assertThat(router.cachedPrefixTokens(0, diverging)).isEqualTo(BLOCK * 2);
        diverging[0]++; // the first differs: a chain hash shares nothing after it
        assertThat(router.cachedPrefixTokens(0, diverging)).isZero();

        router.route(prompt(r, BLOCK * 8), one); // eight newer blocks push a's four out
        assertThat(router.cachedPrefixTokens(0, a)).isZero();

        router.route(a, one);
        router.forget(0);
        assertThat(router.cachedPrefixTokens(0, a)).isZero();
        assertThat(router.cachedPrefixTokens(5, a)).isZero();
    }
}
