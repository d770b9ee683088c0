package io.butterfly.cli.bench;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalDouble;
import java.util.function.ToLongFunction;

/**
 * The requests of one concurrency level and the time they took together (from the first request sent to the last
 * answer received), summarized as vLLM's serving benchmark does: requests/s and output tokens/s of the completed
 * requests, TTFT and TPOT per request, and ITL over every gap between consecutive tokens of every stream.
 * Percentiles are nearest-rank ({@link Stats#percentile}), so below 100 requests p99 is the slowest.
 *
 * @param concurrency requests in flight at most
 * @param timings     every request, completed or failed
 * @param nanos       from the first request sent to the last answer
 */
record ServeLevel(int concurrency, List<RequestTiming> timings, long nanos) {

    ServeLevel {
        timings = List.copyOf(timings);
    }

    long completed() {
        return timings.stream().filter(RequestTiming::ok).count();
    }

    long errors() {
        return timings.size() - completed();
    }

    double requestsPerSecond() {
        return completed() / seconds();
    }

    double outputTokensPerSecond() {
        return timings.stream().filter(RequestTiming::ok).mapToLong(RequestTiming::tokens).sum() / seconds();
    }

    /** The nearest-rank percentile of a per-request time over the completed requests, in nanoseconds; -1 for none. */
    long percentile(ToLongFunction<RequestTiming> time, double p) {
        return Stats.percentile(timings.stream().filter(RequestTiming::ok).map(time::applyAsLong)
                .filter(t -> t >= 0).toList(), p);
    }

    /** The nearest-rank percentile of the inter-token latencies of all completed streams, in nanoseconds. */
    long interTokenPercentile(double p) {
        return Stats.percentile(timings.stream().filter(RequestTiming::ok)
                .flatMap(t -> t.interTokenNanos().stream()).toList(), p);
    }

    /** The first failure's reason, or null. */
    String firstError() {
        return timings.stream().map(RequestTiming::error).filter(Objects::nonNull).findFirst().orElse(null);
    }

    /** The level's line: what bench-serve prints per concurrency level. */
    String line() {
        return String.format(Locale.ROOT, "concurrency=%d requests=%d errors=%d duration_s=%.1f requests_per_s=%.2f"
                        + " output_tokens_per_s=%.2f ttft_ms_p50=%s ttft_ms_p99=%s tpot_ms_p50=%s tpot_ms_p99=%s"
                        + " itl_ms_p99=%s",
                concurrency, timings.size(), errors(), seconds(), requestsPerSecond(), outputTokensPerSecond(),
                ms(percentile(RequestTiming::ttftNanos, 50)), ms(percentile(RequestTiming::ttftNanos, 99)),
                ms(percentile(RequestTiming::tpotNanos, 50)), ms(percentile(RequestTiming::tpotNanos, 99)),
                ms(interTokenPercentile(99)));
    }

    /**
     * The batching ratio: output tokens/s at concurrency 16 ÷ at concurrency 1, both from {@code levels}; empty
     * unless both were measured and some request completed at 1.
     */
    static OptionalDouble batchingRatio(List<ServeLevel> levels) {
        OptionalDouble one = tokensPerSecondAt(levels, 1);
        OptionalDouble sixteen = tokensPerSecondAt(levels, 16);
        return one.isPresent() && sixteen.isPresent() && one.getAsDouble() > 0
                ? OptionalDouble.of(sixteen.getAsDouble() / one.getAsDouble()) : OptionalDouble.empty();
    }

    private static OptionalDouble tokensPerSecondAt(List<ServeLevel> levels, int concurrency) {
        return levels.stream().filter(l -> l.concurrency() == concurrency)
                .mapToDouble(ServeLevel::outputTokensPerSecond).findFirst();
    }

    private double seconds() {
        return Math.max(1, nanos) / 1e9;
    }

    private static String ms(long nanos) {
        return nanos < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }
}
