package io.butterfly.cli.faults;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.concurrent.DaemonThreads;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A steady request load while faults happen: each client streams one request after another (chosen at random from a
 * fixed set whose fault-free tokens are known), at a random coordinator replica and, when that one breaks, at the
 * others with {@code Last-Event-ID}, as {@code ./butterfly generate --stream} does; every outcome goes to the {@link
 * History}. Tokens are checked as they come: a token that is not the fault-free run's at its index is wrong even if
 * the stream fails afterwards.
 */
public final class SteadyLoad implements AutoCloseable {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A request body and the tokens it gives without a fault. */
    public record Request(String body, List<Long> reference) {
    }

    private final List<Request> requests;
    private final Supplier<List<String>> replicas;
    private final History history;
    private final Duration resumeWithin;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> clients = new ArrayList<>();

    /**
     * @param replicas     each coordinator replica's base URL (asked before each request)
     * @param resumeWithin how long a client keeps trying to pick a broken stream up
     */
    public SteadyLoad(List<Request> requests, Supplier<List<String>> replicas, History history, Duration resumeWithin) {
        this.requests = List.copyOf(requests);
        this.replicas = replicas;
        this.history = history;
        this.resumeWithin = resumeWithin;
    }

    /** Starts {@code count} clients, each with its own seeded choices. */
    public SteadyLoad start(int count, long seed) {
        for (int c = 0; c < count; c++) {
            SplittableRandom random = new SplittableRandom(seed * 31 + c);
            clients.add(DaemonThreads.start("steady-load-" + c, () -> {
                while (running.get()) {
                    one(requests.get(random.nextInt(requests.size())), random);
                }
            }));
        }
        return this;
    }

    /** Runs one request to its end and records how it ended. */
    void one(Request request, SplittableRandom random) {
        List<String> bases = replicas.get();
        String base = bases.get(random.nextInt(bases.size()));
        List<String> urls = ResumableStream.at(base, bases, "/api/v1/inference/stream");
        Tokens tokens = new Tokens(request.reference());
        try {
            ResumableStream.Outcome o = new ResumableStream(urls, Duration.ofSeconds(60), resumeWithin, notice -> { })
                    .post(request.body(), tokens::onEvent);
            if (tokens.wrong != null) {
                history.request(History.Outcome.WRONG_TOKENS, tokens.wrong + " (" + request.body() + ")");
            } else if (o.status() != 200) {
                boolean problem = o.body() != null && (o.body().contains("\"detail\"") || o.body().contains("\"title\""));
                history.request(problem ? History.Outcome.FAILED_CLEARLY : History.Outcome.UNCLEAR,
                        "HTTP " + o.status() + " " + o.body());
            } else if (tokens.error != null) {
                boolean said = tokens.error.contains("\"detail\"") || tokens.error.contains("\"title\"");
                history.request(said ? History.Outcome.FAILED_CLEARLY : History.Outcome.UNCLEAR, "error event " + tokens.error);
            } else if (tokens.done == null || !tokens.done.equals(request.reference())
                    || !tokens.told.equals(request.reference())) {
                history.request(History.Outcome.WRONG_TOKENS, "done " + tokens.done + ", streamed " + tokens.told
                        + ", expected " + request.reference());
            } else {
                history.request(History.Outcome.COMPLETED, "");
            }
        } catch (IOException e) {
            // refused everywhere, or broken and not taken up in time: the client is told which
            history.request(tokens.wrong != null ? History.Outcome.WRONG_TOKENS : History.Outcome.FAILED_CLEARLY,
                    tokens.wrong != null ? tokens.wrong : e.toString());
        } catch (RuntimeException e) {
            history.request(History.Outcome.UNCLEAR, e.toString());
        }
    }

    /** One stream's tokens, checked against the reference as they arrive. */
    private final class Tokens {
        private final List<Long> reference;
        final List<Long> told = new ArrayList<>();
        List<Long> done;
        String error;
        String wrong;

        Tokens(List<Long> reference) {
            this.reference = reference;
        }

        void onEvent(String name, String data) {
            JsonNode event = JSON.readTree(data);
            switch (name) {
                case "token" -> {
                    if (told.isEmpty()) {
                        history.acknowledgedTask(event.path("task_id").asString());
                    }
                    int index = event.path("index").asInt();
                    long token = event.path("token_id").asLong();
                    if (wrong == null && (index != told.size() || index >= reference.size() || reference.get(index) != token)) {
                        wrong = "token " + token + " as index " + index + " after " + told.size() + " tokens, expected "
                                + (told.size() < reference.size() ? reference.get(told.size()) : "none");
                    }
                    told.add(token);
                }
                case "done" -> {
                    done = new ArrayList<>();
                    event.path("token_ids").forEach(n -> done.add(n.asLong()));
                }
                case "error" -> error = data;
                default -> { }
            }
        }
    }

    /** Stops the clients after their current request. */
    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread t : clients) {
            t.join(Duration.ofMinutes(2).toMillis());
        }
    }
}
