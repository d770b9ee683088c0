package io.butterfly.harness;

import java.util.ArrayDeque;
import java.util.function.BooleanSupplier;

/**
 * One direction of a call through the harness's network: what passes while the link is open runs at once, in order;
 * what comes while it is held waits, in order, until {@link #release} lets it through (a paused node's messages are
 * delivered when it resumes, as a stopped process's socket buffers are).
 */
final class Valve {

    private final ArrayDeque<Runnable> held = new ArrayDeque<>();
    private boolean releasing;

    /** Runs {@code op} now if the link is open and nothing waits before it; keeps it otherwise. */
    void pass(Runnable op, boolean open) {
        synchronized (this) {
            if (!open || releasing || !held.isEmpty()) {
                held.add(op);
                return;
            }
        }
        op.run();
    }

    /** Lets through what waits, in order, for as long as the link stays open (on the caller's thread). */
    void release(BooleanSupplier open) {
        synchronized (this) {
            if (releasing) {
                return;
            }
            releasing = true;
        }
        while (true) {
            Runnable op;
            synchronized (this) {
                op = open.getAsBoolean() ? held.poll() : null;
                if (op == null) {
                    releasing = false;
                    return;
                }
            }
            op.run();
        }
    }

    /** Drops what waits (the link was cut: none of it arrives). */
    synchronized void drop() {
        held.clear();
    }
}
