package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.InvalidRequestException;

/**
 * The SSE {@code id} of a token event, {@code <task id>:<token index>}: what a client that lost its stream sends back
 * as {@code Last-Event-ID} to get the rest of the same generation, at any replica.
 */
public record StreamEventId(String taskId, int index) {

    /** The header a client sends it back in (the SSE standard's). */
    public static final String HEADER = "Last-Event-ID";

    public static String of(GeneratedToken token) {
        return token.taskId() + ":" + token.index();
    }

    /** Reads a {@code Last-Event-ID}; one this service did not write is refused, naming the header. */
    public static StreamEventId parse(String header) {
        int colon = header.lastIndexOf(':');
        if (colon > 0 && colon < header.length() - 1) {
            try {
                int index = Integer.parseInt(header.substring(colon + 1));
                if (index >= 0) {
                    return new StreamEventId(header.substring(0, colon), index);
                }
            } catch (NumberFormatException notOurs) {
                // refused below
            }
        }
        throw new InvalidRequestException(HEADER, HEADER + " must be the id of a token event (<task id>:<index>),"
                + " got '" + header + "'");
    }
}
