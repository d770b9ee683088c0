package io.butterfly.harness;

import io.butterfly.common.api.ApiJson;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.function.Predicate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A running cluster as a test talks to it: each service's HTTP address and the coordinator's REST API, whether the
 * services run in this JVM ({@link InProcessCluster}) or as processes.
 */
public interface ClusterApi {

    JsonMapper JSON = JsonMapper.builder().build();

    /** A service's own HTTP address ({@code "worker-1"}, {@code "coordinator"}, ...). */
    String urlOf(String name);

    /** The first coordinator's HTTP address. */
    default String coordinatorUrl() {
        return urlOf("coordinator");
    }

    /** Throws, with what the services said, if one of them ended without the test asking. */
    void checkNoServiceDied();

    /** What the services last said (logs), for a failure message. */
    String diagnostics();

    record Reply(int status, String contentType, String body) {
        public JsonNode json() {
            return JSON.readTree(body);
        }

        /** The body as the record the service answers ({@code io.butterfly.common.api}), read as the CLI reads it. */
        public <T> T as(Class<T> answer) {
            return ApiJson.reader().readValue(body, answer);
        }
    }

    /** Polls {@code /api/v1/system/state} until the predicate holds. */
    default JsonNode awaitState(Predicate<JsonNode> done, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            checkNoServiceDied();
            try {
                last = get("/api/v1/system/state").json();
                if (done.test(last)) {
                    return last;
                }
            } catch (IOException e) {
                // not up yet
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("timed out; last state " + last + "\n" + diagnostics());
    }

    /**
     * The task as coordinator {@code name} reports it once it has ended there: a replica records its tasks off the
     * request's path, so a task shows there (and ended) a flush interval after its answer, not with it.
     */
    default JsonNode awaitTaskEnded(String name, String taskId) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        Reply r = getFrom(name, "/api/v1/tasks/" + taskId + "/state");
        while (!(r.status() == 200 && List.of("COMPLETED", "FAILED").contains(r.json().path("state").asString()))
                && System.nanoTime() < deadline) {
            Thread.sleep(20);
            r = getFrom(name, "/api/v1/tasks/" + taskId + "/state");
        }
        return r.json();
    }

    /** GET on the coordinator. */
    default Reply get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(coordinatorUrl() + path)).timeout(Duration.ofSeconds(10)).GET().build());
    }

    /** POST on the coordinator. */
    default Reply post(String path, String json) throws IOException, InterruptedException {
        return post(path, json, "*/*");
    }

    default Reply post(String path, String json, String accept) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(coordinatorUrl() + path)).timeout(Duration.ofMinutes(5))
                .header("Content-Type", "application/json").header("Accept", accept)
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** POST on a service's own HTTP port. */
    default Reply postTo(String name, String path, String json) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(urlOf(name) + path))
                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build());
    }

    /** GET on a service's own HTTP port ({@code "worker-0"}, ...). */
    default Reply getFrom(String name, String path) throws IOException, InterruptedException {
        return getAbsolute(urlOf(name) + path);
    }

    default Reply getAbsolute(String url) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build());
    }

    default Reply send(HttpRequest request) throws IOException, InterruptedException {
        HttpResponse<String> r = Http.CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r.headers().firstValue("Content-Type").orElse(""), r.body());
    }

    /** The one HTTP client the tests' requests go through. */
    final class Http {
        static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

        private Http() {
        }
    }
}
