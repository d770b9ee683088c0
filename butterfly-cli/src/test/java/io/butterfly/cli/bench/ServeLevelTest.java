package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A concurrency level's summary: rates over the completed requests, nearest-rank percentiles, the batching ratio. */
class ServeLevelTest {

    @Test
    void ratesAndPercentilesCountTheCompletedRequestsOnly() {
        Random random = new Random(32);
        for (int trial = 0; trial < 20; trial++) {
            int tokens = 2 + random.nextInt(63);
            List<RequestTiming> timings = new ArrayList<>();
            List<Long> ttfts = new ArrayList<>();
            List<Long> tpots = new ArrayList<>();
            List<Long> gaps = new ArrayList<>();
            int failed = 0;
            for (int r = 0; r < 1 + random.nextInt(150); r++) {
                if (random.nextInt(10) == 0) {
                    timings.add(RequestTiming.failed("HTTP 429: busy"));
                    failed++;
                    continue;
                }
                long ttft = 1 + random.nextInt(2_000_000_000);
                List<Long> itl = new ArrayList<>();
                long e2e = ttft;
                for (int t = 1; t < tokens; t++) {
                    long gap = 1 + random.nextInt(100_000_000);
                    itl.add(gap);
                    e2e += gap;
                }
                e2e += random.nextInt(1_000_000); // the done event comes after the last token
                timings.add(new RequestTiming(null, tokens, ttft, e2e, itl));
                ttfts.add(ttft);
                tpots.add((e2e - ttft) / (tokens - 1));
                gaps.addAll(itl);
            }
            long nanos = 1 + random.nextInt(Integer.MAX_VALUE);
            ServeLevel level = new ServeLevel(4, timings, nanos);

            int completed = timings.size() - failed;
            assertThat(level.completed()).isEqualTo(completed);
            assertThat(level.errors()).isEqualTo(failed);
            assertThat(level.requestsPerSecond()).isCloseTo(completed / (nanos / 1e9), within(1e-9));
            assertThat(level.outputTokensPerSecond()).isCloseTo((double) completed * tokens / (nanos / 1e9), within(1e-6));
            for (double p : new double[]{0, 50, 99, 100}) {
                assertThat(level.percentile(RequestTiming::ttftNanos, p)).isEqualTo(nearestRank(ttfts, p));
                assertThat(level.percentile(RequestTiming::tpotNanos, p)).isEqualTo(nearestRank(tpots, p));
                assertThat(level.interTokenPercentile(p)).isEqualTo(nearestRank(gaps, p));
            }
        }
    }

    @Test
    void theLineNamesEveryFigureInMilliseconds() {
        RequestTiming a = new RequestTiming(null, 3, 100_000_000, 300_000_000, List.of(50_000_000L, 150_000_000L));
        RequestTiming b = new RequestTiming(null, 3, 200_000_000, 300_000_000, List.of(40_000_000L, 60_000_000L));
        ServeLevel level = new ServeLevel(2, List.of(a, b, RequestTiming.failed("HTTP 429: busy")), 2_000_000_000L);
        assertThat(level.line()).isEqualTo("concurrency=2 requests=3 errors=1 duration_s=2.0 requests_per_s=1.00"
                + " output_tokens_per_s=3.00 ttft_ms_p50=100.0 ttft_ms_p99=200.0 tpot_ms_p50=50.0 tpot_ms_p99=100.0"
                + " itl_ms_p99=150.0");
        assertThat(level.firstError()).isEqualTo("HTTP 429: busy");
        assertThat(new ServeLevel(1, List.of(RequestTiming.failed("refused")), 1_000_000_000L).line())
                .contains("output_tokens_per_s=0.00 ttft_ms_p50=n/a", "itl_ms_p99=n/a");
    }

    @Test
    void theBatchingRatioIsSixteenOverOneMeasuredInTheSameRun() {
        ServeLevel one = level(1, 64, 4_000_000_000L); // 16 tokens/s
        ServeLevel four = level(4, 256, 4_000_000_000L);
        ServeLevel sixteen = level(16, 1024, 8_000_000_000L); // 128 tokens/s
        assertThat(ServeLevel.batchingRatio(List.of(one, four, sixteen)).getAsDouble()).isCloseTo(8.0, within(1e-9));
        assertThat(ServeLevel.batchingRatio(List.of(sixteen, one)).getAsDouble()).isCloseTo(8.0, within(1e-9));
        assertThat(ServeLevel.batchingRatio(List.of(one, four))).isEmpty();
        assertThat(ServeLevel.batchingRatio(List.of(four, sixteen))).isEmpty();
        ServeLevel noneCompleted = new ServeLevel(1, List.of(RequestTiming.failed("refused")), 1_000_000_000L);
        assertThat(ServeLevel.batchingRatio(List.of(noneCompleted, sixteen))).isEmpty();
    }

    /** A level whose requests made {@code tokens} tokens in all, 64 each, in {@code nanos}. */
    private static ServeLevel level(int concurrency, int tokens, long nanos) {
        List<RequestTiming> timings = new ArrayList<>();
        for (int r = 0; r < tokens / 64; r++) {
            timings.add(new RequestTiming(null, 64, 1, 2, List.of()));
        }
        return new ServeLevel(concurrency, timings, nanos);
    }

    /** The smallest sample with at least p% of the samples at or below it (the first for p = 0); -1 for none. */
    private static long nearestRank(List<Long> samples, double p) {
        if (samples.isEmpty()) {
            return -1;
        }
        long[] sorted = samples.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        for (long candidate : sorted) {
            long atOrBelow = Arrays.stream(sorted).filter(x -> x <= candidate).count();
            if (atOrBelow * 100.0 >= p * sorted.length) {
                return candidate;
            }
        }
        return sorted[sorted.length - 1];
    }
}
