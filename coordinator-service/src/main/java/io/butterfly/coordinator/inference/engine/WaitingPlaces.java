package io.butterfly.coordinator.inference.engine;

import java.util.concurrent.Semaphore;

/**
 * The places of the engine's waiting queue ({@code max-waiting}), taken by a request as it is admitted, on its
 * caller's thread, and given back when it leaves the queue (it starts, or ends while waiting). So a full queue refuses
 * a request at once (429) without its caller waiting for the engine's thread. Thread-safe.
 */
public final class WaitingPlaces {

    private final int places;
    private final Semaphore free;

    WaitingPlaces(int places) {
        this.places = places;
        this.free = new Semaphore(places);
    }

    /**
     * Takes {@code n} places, all or none: several requests that run together (an OpenAI list of prompts) are refused
     * together.
     */
    public void take(int n) {
        if (free.tryAcquire(n)) {
            return;
        }
        int taken = places - free.availablePermits();
        if (n > 1) {
            throw new QueueFullException(n + " requests do not fit the queue (" + taken + " of " + places
                    + " places taken: butterfly.coordinator.engine.max-waiting); retry shortly");
        }
        throw new QueueFullException(taken + " requests are waiting, the most this coordinator queues"
                + " (butterfly.coordinator.engine.max-waiting); retry shortly");
    }

    void giveBack(int n) {
        free.release(n);
    }
}
