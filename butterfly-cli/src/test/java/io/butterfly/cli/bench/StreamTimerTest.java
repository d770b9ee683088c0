package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.PlainHttp;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Timing a streamed answer from its server-sent events, the clock read as each event is handed over. */
class StreamTimerTest {

    private static final PlainHttp.Response OK = new PlainHttp.Response(200, "");

    @Test
    void timesTheFirstTokenTheEndAndTheGapsBetweenTokensAsTheEventsArrive() throws IOException {
        Random random = new Random(32);
        for (int trial = 0; trial < 50; trial++) {
            int tokens = 1 + random.nextInt(64);
            long start = random.nextInt(1_000_000);
            // The clock's reading at each event: the tokens, an event this client does not know, then done.
            Deque<Long> readings = new ArrayDeque<>();
            long now = start;
            List<Long> tokenTimes = new ArrayList<>();
            for (int e = 0; e < tokens + 2; e++) {
                now += 1 + random.nextInt(50_000_000);
                readings.add(now);
                if (e < tokens) {
                    tokenTimes.add(now);
                }
            }
            long done = now;
            StreamTimer timer = new StreamTimer(start, readings::removeFirst);
            PlainHttp.readEvents(stream(tokens, ": a comment\n\nevent: keepalive\ndata: {}\n\n"), timer);

            RequestTiming timing = timer.result(OK, tokens);
            assertThat(readings).as("one clock reading per event; none for a comment").isEmpty();
            assertThat(timing.ok()).isTrue();
            assertThat(timing.tokens()).isEqualTo(tokens);
            assertThat(timing.ttftNanos()).isEqualTo(tokenTimes.get(0) - start);
            assertThat(timing.e2eNanos()).isEqualTo(done - start);
            assertThat(timing.interTokenNanos()).hasSize(tokens - 1);
            for (int t = 1; t < tokens; t++) {
                assertThat(timing.interTokenNanos().get(t - 1)).isEqualTo(tokenTimes.get(t) - tokenTimes.get(t - 1));
            }
            assertThat(timing.tpotNanos()).isEqualTo(tokens < 2 ? -1 : (done - tokenTimes.get(0)) / (tokens - 1));
        }
    }

    @Test
    void anErrorEventAMissingEndTooFewTokensOrARefusalIsAFailedRequest() throws IOException {
        assertThat(timed(stream(3, "event: error\ndata: {\"status\": 500}\n\n"), OK, 3).error())
                .isEqualTo("error event: {\"status\": 500}");
        assertThat(timed(new ByteArrayInputStream(tokenEvents(3).getBytes(StandardCharsets.UTF_8)), OK, 3).error())
                .isEqualTo("the stream ended without its done event");
        assertThat(timed(stream(2, ""), OK, 3).error()).isEqualTo("2 tokens streamed, 3 asked for");
        RequestTiming refused = timed(new ByteArrayInputStream(new byte[0]),
                new PlainHttp.Response(429, "{\"detail\": \"too many tasks\"}\n"), 3);
        assertThat(refused.ok()).isFalse();
        assertThat(refused.error()).isEqualTo("HTTP 429: {\"detail\": \"too many tasks\"}");
    }

    private static RequestTiming timed(ByteArrayInputStream events, PlainHttp.Response response, int expected)
            throws IOException {
        long[] clock = {0};
        StreamTimer timer = new StreamTimer(0, () -> ++clock[0]);
        PlainHttp.readEvents(events, timer);
        return timer.result(response, expected);
    }

    /** {@code tokens} token events, then {@code extra}, then done: as the coordinator writes them. */
    private static ByteArrayInputStream stream(int tokens, String extra) {
        String done = "event:done\ndata:{\"token_ids\": [], \"finish_reason\": \"length\"}\n\n";
        return new ByteArrayInputStream((tokenEvents(tokens) + extra + done).getBytes(StandardCharsets.UTF_8));
    }

    private static String tokenEvents(int tokens) {
        StringBuilder s = new StringBuilder();
        for (int t = 0; t < tokens; t++) {
            s.append("event:token\ndata:{\"task_id\": \"t\", \"index\": ").append(t)
                    .append(", \"token_id\": 7, \"text\": \"\\n\\n\", \"logprob\": -1.5}\n\n");
        }
        return s.toString();
    }
}
