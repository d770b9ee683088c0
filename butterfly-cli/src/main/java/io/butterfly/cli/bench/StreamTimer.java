package io.butterfly.cli.bench;

import io.butterfly.cli.http.PlainHttp;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * Times one {@code POST /api/v1/inference/stream} as its events arrive: the clock is read the moment each
 * {@code token} event is handed over (the SSE reader hands each over as soon as its blank line is read), so what
 * is measured is arrival at the client, not what the server reports.
 */
final class StreamTimer implements PlainHttp.EventHandler {

    private final long start;
    private final LongSupplier clock;
    private final List<Long> tokenTimes = new ArrayList<>();
    private long doneAt = -1;
    private String error;

    /**
     * @param start the clock's reading just before the request was sent
     * @param clock nanoseconds ({@code System::nanoTime})
     */
    StreamTimer(long start, LongSupplier clock) {
        this.start = start;
        this.clock = clock;
    }

    @Override
    public void onEvent(String name, String data) {
        long now = clock.getAsLong();
        switch (name) {
            case "token" -> tokenTimes.add(now);
            case "done" -> doneAt = now;
            case "error" -> error = "error event: " + data;
            default -> { } // an event this client does not know: ignored, as the format wants
        }
    }

    /** The request's timing once the stream has ended with HTTP {@code response}, which asked for {@code expected} tokens. */
    RequestTiming result(PlainHttp.Response response, int expected) {
        if (response.status() != 200) {
            return RequestTiming.failed("HTTP " + response.status() + ": " + response.body().strip());
        }
        if (error != null) {
            return RequestTiming.failed(error);
        }
        if (doneAt < 0) {
            return RequestTiming.failed("the stream ended without its done event");
        }
        if (tokenTimes.size() != expected) {
            return RequestTiming.failed(tokenTimes.size() + " tokens streamed, " + expected + " asked for");
        }
        List<Long> gaps = new ArrayList<>(tokenTimes.size());
        for (int i = 1; i < tokenTimes.size(); i++) {
            gaps.add(tokenTimes.get(i) - tokenTimes.get(i - 1));
        }
        return new RequestTiming(null, tokenTimes.size(), tokenTimes.get(0) - start, doneAt - start, gaps);
    }
}
