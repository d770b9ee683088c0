package io.butterfly.cli.bench;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/** The benchmarks' summaries: medians, nearest-rank percentiles, ratios with two decimals. */
final class Stats {

    private Stats() {
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /**
     * The median of numbers as printed (milliseconds, or ratios with two decimals): the middle one as given for an
     * odd count, else the mean of the middle two, whole or with two decimals.
     */
    static String median(List<String> printed) {
        List<String> sorted = printed.stream().sorted(Comparator.comparingDouble(Double::parseDouble)).toList();
        int n = sorted.size();
        if (n % 2 == 1) {
            return sorted.get(n / 2);
        }
        double m = (Double.parseDouble(sorted.get(n / 2 - 1)) + Double.parseDouble(sorted.get(n / 2))) / 2;
        return m == Math.rint(m) ? Long.toString((long) m) : String.format(Locale.ROOT, "%.2f", m);
    }

    /** a / b with two decimals. */
    static String ratio(long a, long b) {
        return String.format(Locale.ROOT, "%.2f", (double) a / b);
    }

    /** Nearest-rank percentile (p in 0..100; 0 = min), -1 for no samples. */
    static long percentile(List<Long> samples, double p) {
        if (samples.isEmpty()) {
            return -1;
        }
        long[] sorted = samples.stream().mapToLong(Long::longValue).sorted().toArray();
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }
}
