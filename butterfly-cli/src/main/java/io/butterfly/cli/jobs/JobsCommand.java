package io.butterfly.cli.jobs;

import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.home.ClusterApiKeys;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * {@code ./butterfly jobs create|watch|results}: a batch job defined from a JSONL dataset, its progress followed, its
 * results downloaded, over the coordinator's REST API with the admin key (docs/jobs.md).
 */
@Command(name = "jobs", description = "batch jobs pulled by JOBS clients (docs/jobs.md)",
        subcommands = {JobsCommand.Create.class, JobsCommand.Watch.class, JobsCommand.Results.class})
public final class JobsCommand implements Runnable {

    static final JsonMapper JSON = JsonMapper.builder().build();

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Where and as whom the subcommands call. */
    static class Target {
        @Option(names = "--url", paramLabel = "URL", description = "the coordinator (default: this machine's)")
        String url;

        @Option(names = "--admin-key", paramLabel = "KEY",
                description = "the admin API key (default: .butterfly/keys/admin.key)")
        String adminKey;

        String url() {
            return url != null ? url : PortLayout.fromEnvironment().coordinatorUrl();
        }

        HttpRequest.Builder request(String path) {
            String key = adminKey != null ? adminKey
                    : ClusterApiKeys.readKey(ButterflyHome.fromEnvironment().keys().resolve(ClusterApiKeys.ADMIN_FILE));
            HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url() + path)).timeout(Duration.ofMinutes(5));
            return key == null ? b : b.header("Authorization", "Bearer " + key);
        }
    }

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    static HttpResponse<String> send(HttpRequest request) throws IOException {
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    /** The answer's body if 2xx, else its problem printed and null. */
    static String ok(CommandSpec spec, HttpResponse<String> r) {
        if (r.statusCode() / 100 == 2) {
            return r.body();
        }
        spec.commandLine().getErr().println(r.request().method() + " " + r.request().uri().getPath() + ": "
                + r.statusCode() + " " + r.body());
        return null;
    }

    @Command(name = "create", description = "import a JSONL dataset and define a job over it")
    static final class Create implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Mixin
        Target target = new Target();

        @Parameters(index = "0", paramLabel = "ID", description = "the job's id ([a-z0-9-])")
        String id;

        @Option(names = "--dataset", required = true, paramLabel = "FILE",
                description = "JSONL: {\"prompt\": ...} or {\"messages\": [...]} a line")
        Path dataset;

        @Option(names = "--batch-size", required = true, paramLabel = "N", description = "samples per batch")
        int batchSize;

        @Option(names = "--seed", required = true, paramLabel = "S", description = "the job's seed, how clients name it")
        long seed;

        @Option(names = "--max-tokens", paramLabel = "N", description = "tokens per sample, at most (default 64)")
        Integer maxTokens;

        @Option(names = "--temperature", paramLabel = "T", description = "default 1")
        Double temperature;

        @Option(names = "--top-p", paramLabel = "P", description = "default 1")
        Double topP;

        @Option(names = "--top-k", paramLabel = "K", description = "default 0 (every token)")
        Integer topK;

        @Override
        public Integer call() throws IOException {
            HttpResponse<String> imported = send(target.request("/api/v1/jobs/datasets")
                    .header("Content-Type", "application/x-ndjson")
                    .POST(HttpRequest.BodyPublishers.ofFile(dataset)).build());
            String body = ok(spec, imported);
            if (body == null) {
                return 1;
            }
            Map<String, Object> job = new LinkedHashMap<>();
            job.put("id", id);
            job.put("dataset_sha256", JSON.readTree(body).path("sha256").asString());
            job.put("batch_size", batchSize);
            job.put("seed", seed);
            putIfSet(job, "max_tokens", maxTokens);
            putIfSet(job, "temperature", temperature);
            putIfSet(job, "top_p", topP);
            putIfSet(job, "top_k", topK);
            String defined = ok(spec, send(target.request("/api/v1/jobs").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(job))).build()));
            if (defined == null) {
                return 1;
            }
            spec.commandLine().getOut().println(defined);
            return 0;
        }

        private static void putIfSet(Map<String, Object> job, String name, Object value) {
            if (value != null) {
                job.put(name, value);
            }
        }
    }

    @Command(name = "watch", description = "print a job's progress until every step begun is done")
    static final class Watch implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Mixin
        Target target = new Target();

        @Parameters(index = "0", paramLabel = "ID")
        String id;

        @Option(names = "--interval", paramLabel = "SECONDS", defaultValue = "2", description = "default ${DEFAULT-VALUE}")
        double interval;

        @Option(names = "--once", description = "print the progress once")
        boolean once;

        @Override
        public Integer call() throws IOException, InterruptedException {
            while (true) {
                String body = ok(spec, send(target.request("/api/v1/jobs/" + id).GET().build()));
                if (body == null) {
                    return 1;
                }
                JsonNode p = JSON.readTree(body).path("progress");
                spec.commandLine().getOut().printf("%s: done %d, leased %d, pending %d positions; %d results,"
                                + " %.2f results/s%n", id, p.path("done").asLong(), p.path("leased").asLong(),
                        p.path("pending").asLong(), p.path("results").asLong(), p.path("results_per_second").asDouble());
                spec.commandLine().getOut().flush();
                if (once || (p.path("pending").asLong() == 0 && p.path("leased").asLong() == 0)) {
                    return 0;
                }
                Thread.sleep((long) (interval * 1000));
            }
        }
    }

    @Command(name = "results", description = "a job's results as JSONL (GET /api/v1/jobs/{id}/results)")
    static final class Results implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @picocli.CommandLine.Mixin
        Target target = new Target();

        @Parameters(index = "0", paramLabel = "ID")
        String id;

        @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "write them here (default: stdout)")
        Path output;

        @Override
        public Integer call() throws IOException {
            HttpResponse<InputStream> r;
            try {
                r = HTTP.send(target.request("/api/v1/jobs/" + id + "/results").GET().build(),
                        HttpResponse.BodyHandlers.ofInputStream());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return 1;
            }
            try (InputStream in = r.body()) {
                if (r.statusCode() != 200) {
                    spec.commandLine().getErr().println("GET results: " + r.statusCode() + " "
                            + new String(in.readAllBytes(), StandardCharsets.UTF_8));
                    return 1;
                }
                if (output != null) {
                    try (OutputStream out = Files.newOutputStream(output)) {
                        in.transferTo(out); // streamed: a large job's results are never held whole
                    }
                } else {
                    java.io.PrintWriter out = spec.commandLine().getOut();
                    new java.io.BufferedReader(new java.io.InputStreamReader(in, StandardCharsets.UTF_8)).lines()
                            .forEach(out::println);
                    out.flush();
                }
            }
            return 0;
        }
    }
}
