package io.butterfly.cli.bench;

import java.util.List;

/**
 * One streamed request as the client saw it, times in nanoseconds from just before it was sent: its first token
 * (TTFT), its end (the {@code done} event) and the gaps between consecutive tokens; or why it failed.
 *
 * @param error           why the request failed, or null if it completed with the tokens asked for
 * @param tokens          tokens received
 * @param ttftNanos       until the first token arrived
 * @param e2eNanos        until the answer ended
 * @param interTokenNanos the gaps between consecutive tokens (tokens - 1 of them)
 */
record RequestTiming(String error, int tokens, long ttftNanos, long e2eNanos, List<Long> interTokenNanos) {

    RequestTiming {
        interTokenNanos = List.copyOf(interTokenNanos);
    }

    static RequestTiming failed(String why) {
        return new RequestTiming(why, 0, -1, -1, List.of());
    }

    boolean ok() {
        return error == null;
    }

    /** Time per output token after the first, (e2e - TTFT) / (tokens - 1); -1 for fewer than two tokens. */
    long tpotNanos() {
        return tokens < 2 ? -1 : (e2eNanos - ttftNanos) / (tokens - 1);
    }
}
