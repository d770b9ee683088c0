package io.butterfly.cli.bench;

import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.concurrent.DaemonThreads;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak's load beside the checked streams: chat completions, streams the client cancels (closes) after a few
 * tokens, and long prompts, each client drawing one kind after another. Counts each kind's outcomes by status.
 */
final class MixedLoad implements AutoCloseable {

    enum Kind { CHAT, CANCELLED_STREAM, LONG_PROMPT }

    private final String base;
    private final String modelId;
    private final int vocab;
    private final int longPrompt;
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> clients = new ArrayList<>();
    private final Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();

    /** @param modelId the served model's id, which a chat completion must name */
    MixedLoad(String base, String modelId, int vocab, int longPrompt) {
        this.base = base;
        this.modelId = modelId;
        this.vocab = vocab;
        this.longPrompt = longPrompt;
    }

    MixedLoad start(int count, long seed) {
        for (int c = 0; c < count; c++) {
            SplittableRandom random = new SplittableRandom(seed * 17 + c);
            clients.add(DaemonThreads.start("mixed-load-" + c, () -> {
                while (running.get()) {
                    Kind kind = Kind.values()[random.nextInt(Kind.values().length)];
                    count(kind, one(kind, random));
                }
            }));
        }
        return this;
    }

    private String one(Kind kind, SplittableRandom random) {
        try {
            return switch (kind) {
                case CHAT -> status(PlainHttp.postJson(base + "/v1/chat/completions", "{\"model\": \"" + modelId + "\", \"messages\": ["
                        + "{\"role\": \"system\", \"content\": \"You are terse.\"}, {\"role\": \"user\", \"content\": \"Say "
                        + random.nextInt(1000) + " in words.\"}], \"max_tokens\": 16, \"temperature\": 0.7, \"seed\": "
                        + random.nextInt(1 << 20) + "}", Duration.ofMinutes(5)));
                case CANCELLED_STREAM -> cancelledStream(random);
                case LONG_PROMPT -> status(PlainHttp.postJson(base + "/api/v1/inference", "{\"token_ids\": "
                        + prompt(random, longPrompt) + ", \"max_tokens\": 8, \"temperature\": 0}", Duration.ofMinutes(5)));
            };
        } catch (IOException e) {
            return "io-error";
        }
    }

    /** A stream read for a few tokens, then closed by the client: the engine must let the request go. */
    private String cancelledStream(SplittableRandom random) throws IOException {
        int after = 1 + random.nextInt(8);
        int[] seen = {0};
        try {
            PlainHttp.Response r = PlainHttp.postForEvents(base + "/api/v1/inference/stream", "{\"token_ids\": "
                    + prompt(random, 16) + ", \"max_tokens\": 64, \"ignore_eos\": true}", Duration.ofMinutes(5), (name, data) -> {
                        if (name.equals("token") && ++seen[0] >= after) {
                            throw new Cancelled();
                        }
                    });
            return status(r);
        } catch (Cancelled c) {
            return "cancelled";
        }
    }

    /** Thrown out of the event handler to close the connection mid-stream. */
    private static final class Cancelled extends IOException {
        Cancelled() {
            super("cancelled by the client");
        }
    }

    private String prompt(SplittableRandom random, int maxLength) {
        StringBuilder b = new StringBuilder("[");
        int n = Math.max(1, maxLength / 2 + random.nextInt(Math.max(1, maxLength / 2)));
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ",").append(3 + random.nextInt(vocab - 3));
        }
        return b.append(']').toString();
    }

    private static String status(PlainHttp.Response r) {
        return Integer.toString(r.status());
    }

    private void count(Kind kind, String outcome) {
        outcomes.computeIfAbsent(kind.name().toLowerCase(java.util.Locale.ROOT) + " " + outcome, k -> new AtomicLong())
                .incrementAndGet();
    }

    /** Each kind's outcomes ("chat 200", "cancelled_stream cancelled", ...) and how many. */
    Map<String, Long> outcomes() {
        Map<String, Long> out = new java.util.TreeMap<>();
        outcomes.forEach((k, v) -> out.put(k, v.get()));
        return out;
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        for (Thread t : clients) {
            t.join(Duration.ofMinutes(2).toMillis());
        }
    }
}
