package io.butterfly.cli.bench;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether the services' JIT compilers have settled: a benchmark's warm-up goes on until they have, so that its
 * figures are the steady state's. On two cores a fresh three-worker cluster still spent about a millisecond of C2
 * time a token in every process after 1,000 tokens (a third of its CPU), and decoded at 75 tokens/s; after
 * 10,000 tokens the compilers took 0.06 ms a token and the same cluster decoded at 120-145 (AMD EPYC, 2026-12-04).
 *
 * <p>Each service's {@code jvm_compilation_time_ms_total} (Micrometer's JVM compilation metric on its
 * {@code /actuator/prometheus}) is read after every warm-up round; the compilers have settled once, over the last
 * {@value #WINDOW} rounds, the services together compiled for at most {@value #SETTLED_SHARE} of those rounds' time.
 */
final class JitSettling {

    static final int WINDOW = 3;
    static final double SETTLED_SHARE = 0.05;

    private static final Pattern COMPILATION = Pattern.compile("^jvm_compilation_time_ms_total\\{[^}]*} ([0-9.eE+]+)$",
            Pattern.MULTILINE);

    private final List<URI> prometheus;
    private final HttpClient http = HttpClient.newHttpClient();
    private final Deque<double[]> rounds = new ArrayDeque<>(); // {round's wall ms, its compilation ms}
    private double lastCompileMs = Double.NaN;
    private long lastNanos;

    /** {@code baseUrls}: each service's HTTP base, e.g. http://127.0.0.1:8090. */
    JitSettling(List<String> baseUrls) {
        this.prometheus = baseUrls.stream().map(u -> URI.create(u + "/actuator/prometheus")).toList();
    }

    /** Reads the compilers' time at the end of a round; the first call starts the count. */
    void roundEnded() throws IOException, InterruptedException {
        read(true);
    }

    /** Starts the next round here, not counting the time since the last (time the services were idle). */
    void skip() throws IOException, InterruptedException {
        read(false);
    }

    private void read(boolean count) throws IOException, InterruptedException {
        double compileMs = compileMillis();
        long now = System.nanoTime();
        if (count && !Double.isNaN(lastCompileMs)) {
            rounds.addLast(new double[] {(now - lastNanos) / 1e6, compileMs - lastCompileMs});
            if (rounds.size() > WINDOW) {
                rounds.removeFirst();
            }
        }
        lastCompileMs = compileMs;
        lastNanos = now;
    }

    boolean settled() {
        return rounds.size() == WINDOW && recentShare() <= SETTLED_SHARE;
    }

    /** The compilers' time over the last rounds' wall time (NaN before two rounds). */
    double recentShare() {
        double wall = 0;
        double compile = 0;
        for (double[] r : rounds) {
            wall += r[0];
            compile += r[1];
        }
        return rounds.isEmpty() ? Double.NaN : compile / wall;
    }

    private double compileMillis() throws IOException, InterruptedException {
        double total = 0;
        for (URI uri : prometheus) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            Matcher m = COMPILATION.matcher(r.body());
            if (r.statusCode() != 200 || !m.find()) {
                throw new IOException(uri + " gave no jvm_compilation_time_ms_total (HTTP " + r.statusCode() + ")");
            }
            total += Double.parseDouble(m.group(1));
        }
        return total;
    }
}
