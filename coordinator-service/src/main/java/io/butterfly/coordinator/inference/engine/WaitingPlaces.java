package io.butterfly.coordinator.inference.engine;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

/**
 * The places of the engine's waiting queue ({@code max-waiting}), taken by a request as it is admitted, on its
 * caller's thread, and given back when it leaves the queue (it starts, or ends while waiting). So a full queue refuses
 * a request at once (429) without its caller waiting for the engine's thread. An API key holds at most
 * {@code max-waiting-per-key} of them, so one key's flood cannot fill the queue for the others; requests without a
 * key ({@link Sequence#ANONYMOUS}) share the queue as a whole. Thread-safe.
 */
public final class WaitingPlaces {

    private final int places;
    private final int perKey;
    private final Semaphore free;
    /** Places each key holds (keys holding none are not kept). */
    private final ConcurrentHashMap<String, Integer> byKey = new ConcurrentHashMap<>();

    WaitingPlaces(int places) {
        this(places, Integer.MAX_VALUE);
    }

    WaitingPlaces(int places, int perKey) {
        this.places = places;
        this.perKey = perKey;
        this.free = new Semaphore(places);
    }

    /** {@link #take(String, int)} without a key. */
    public void take(int n) {
        take(Sequence.ANONYMOUS, n);
    }

    /**
     * Takes {@code n} places for {@code key}, all or none: several requests that run together (an OpenAI list of
     * prompts) are refused together.
     */
    public void take(String key, int n) {
        if (!Sequence.ANONYMOUS.equals(key)) {
            boolean[] over = new boolean[1];
            byKey.compute(key, (k, held) -> {
                int now = held == null ? 0 : held;
                over[0] = now + n > perKey;
                return over[0] ? held : Integer.valueOf(now + n);
            });
            if (over[0]) {
                throw new QueueFullException("this API key has " + heldBy(key) + " requests waiting, the most one key"
                        + " may queue (butterfly.coordinator.engine.max-waiting-per-key " + perKey + "); retry shortly", 1);
            }
        }
        if (free.tryAcquire(n)) {
            return;
        }
        release(key, n);
        int taken = places - free.availablePermits();
        if (n > 1) {
            throw new QueueFullException(n + " requests do not fit the queue (" + taken + " of " + places
                    + " places taken: butterfly.coordinator.engine.max-waiting); retry shortly", 1);
        }
        throw new QueueFullException(taken + " requests are waiting, the most this coordinator queues"
                + " (butterfly.coordinator.engine.max-waiting); retry shortly", 1);
    }

    void giveBack(int n) {
        giveBack(Sequence.ANONYMOUS, n);
    }

    void giveBack(String key, int n) {
        free.release(n);
        release(key, n);
    }

    /** Places {@code key} holds. */
    int heldBy(String key) {
        return byKey.getOrDefault(key, 0);
    }

    private void release(String key, int n) {
        if (!Sequence.ANONYMOUS.equals(key)) {
            byKey.computeIfPresent(key, (k, held) -> held - n <= 0 ? null : held - n);
        }
    }
}
