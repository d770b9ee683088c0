package io.butterfly.coordinator.cluster;

import java.util.Objects;

/**
 * A batch handed out and not answered yet (docs/jobs.md, leases): whoever holds it has until {@code expiresAtMs} to
 * send its RESULT; after that the next JOB_REQUEST for any batch of the step gets it (the same bytes).
 *
 * @param step        the step it was handed out for
 * @param position    the batch's first dataset position
 * @param holder      who holds it: the handing-out replica, connection and request (unique per hand-out)
 * @param leasedAtMs  when it was (last) handed out
 * @param expiresAtMs when its lease ends
 * @param handouts    how many times it was handed out (more than 1: a lease expired and it went to another client)
 */
public record JobLease(long step, long position, String holder, long leasedAtMs, long expiresAtMs, int handouts) {

    public JobLease {
        Objects.requireNonNull(holder, "holder");
    }

    public boolean expired(long nowMs) {
        return expiresAtMs <= nowMs;
    }
}
