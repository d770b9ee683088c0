package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.home.ButterflyHome;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Two clusters serving the same model, each under its own state directory and port offset and without API keys, and
 * the same greedy request decoded on both in interleaved rounds (the two take turns going first, so that neither
 * always meets the machine as the other left it): the baseline and the layout a benchmark compares with it
 * ({@code bench-heads}, {@code bench-moe}).
 */
final class PairedClusters implements AutoCloseable {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** What a round printed: its number from 1, and both clusters' decode tokens/s. */
    interface RoundReport {
        void round(int number, double baseline, double compared);
    }

    /** Each round's decode tokens/s of the baseline and of the compared cluster. */
    record Rounds(double[] baseline, double[] compared) {
    }

    private final Cluster baseline;
    private final Cluster compared;

    /**
     * @param name   the state directory's name under the home's state ({@code <name>/<baseline's dir>}, ...)
     * @param offset the first cluster's port offset beyond the environment's; the second's is 300 more
     */
    PairedClusters(ButterflyHome home, String name, int offset, String baselineDir, UpOptions baselineOptions,
            String comparedDir, UpOptions comparedOptions) {
        int portOffset = PortLayout.fromEnvironment().offset() + offset;
        baseline = new Cluster(home, name + "/" + baselineDir, portOffset, baselineOptions);
        compared = new Cluster(home, name + "/" + comparedDir, portOffset + 300, comparedOptions);
    }

    void start(Path model, PrintWriter progress) {
        baseline.launcher.up(baseline.options.withModel(model), progress);
        compared.launcher.up(compared.options.withModel(model), progress);
    }

    /** The compared cluster's stages' groups as system/state lists them ({@code expert_groups}: experts or heads). */
    String comparedGroups() throws IOException, InterruptedException {
        URI uri = URI.create(compared.launcher.ports().coordinatorUrl() + "/api/v1/system/state");
        JsonNode state = JSON.readTree(compared.http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30))
                .GET().build(), HttpResponse.BodyHandlers.ofString()).body());
        List<JsonNode> groups = state.findValues("expert_groups");
        return groups.isEmpty() ? "(none)" : groups.toString();
    }

    /**
     * Decodes {@code body} on both until {@code warmupSeconds} have passed (at least once each), then {@code rounds}
     * times each, reporting every round as it ends.
     */
    Rounds measure(String body, int warmupSeconds, int rounds, PrintWriter out, RoundReport report)
            throws IOException, InterruptedException {
        long warmupEnd = System.nanoTime() + warmupSeconds * 1_000_000_000L;
        int warmupRounds = 0;
        while (warmupRounds < 1 || System.nanoTime() < warmupEnd) {
            baseline.decodeTokensPerSecond(body);
            compared.decodeTokensPerSecond(body);
            warmupRounds++;
        }
        out.printf("warm-up: %d rounds%n", warmupRounds);
        double[] first = new double[rounds];
        double[] second = new double[rounds];
        for (int r = 0; r < rounds; r++) {
            boolean baselineFirst = r % 2 == 0;
            if (baselineFirst) {
                first[r] = baseline.decodeTokensPerSecond(body);
            }
            second[r] = compared.decodeTokensPerSecond(body);
            if (!baselineFirst) {
                first[r] = baseline.decodeTokensPerSecond(body);
            }
            report.round(r + 1, first[r], second[r]);
        }
        return new Rounds(first, second);
    }

    @Override
    public void close() {
        compared.launcher.down();
        baseline.launcher.down();
    }

    private static final class Cluster {
        final Launcher launcher;
        final UpOptions options;
        final HttpClient http = HttpClient.newHttpClient();

        Cluster(ButterflyHome home, String state, int portOffset, UpOptions options) {
            this.launcher = new Launcher(home.withState(home.state().resolve(state)), PortLayout.withOffset(portOffset));
            this.options = options.withApiKeys(UpOptions.ApiKeyFiles.NONE);
        }

        /** The coordinator's decode tokens/s of one greedy request. */
        double decodeTokensPerSecond(String body) throws IOException, InterruptedException {
            URI uri = URI.create(launcher.ports().coordinatorUrl() + "/api/v1/inference");
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri)
                    .header("Content-Type", "application/json").timeout(Duration.ofMinutes(10))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("inference on " + options.workers() + " worker(s) failed: HTTP "
                        + r.statusCode() + " " + r.body());
            }
            return JSON.readTree(r.body()).path("timings").path("decode_tokens_per_second").asDouble();
        }
    }
}
