package io.butterfly.coordinator.inference.engine;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The waiting sequences, one queue per tenant (the API key a request came with; all requests without a key share
 * one), served round robin: the next to start is the oldest of the tenant whose turn it is, then that tenant goes to
 * the back. So a tenant's burst of N requests delays another tenant's request by one start per tenant waiting, not by
 * N: with K tenants waiting, a request starts after at most K - 1 starts of the others (once it is at its tenant's
 * head). Within a tenant, arrival order. Not thread-safe: the engine's thread owns it.
 */
final class FairQueue {

    /** The tenants with waiting sequences, in turn order (the first is next). */
    private final Map<String, Deque<Sequence>> byTenant = new LinkedHashMap<>();
    private int size;

    void add(Sequence s) {
        byTenant.computeIfAbsent(s.tenant(), t -> new ArrayDeque<>()).add(s);
        size++;
    }

    /**
     * The head of the first interactive tenant in turn order that {@code eligible} admits (a tenant at its running cap
     * is passed over, keeping its turn); only when there is none, the first such background tenant's
     * ({@link Sequence#background}: batch jobs take turns among themselves, below every interactive request); or null.
     */
    Sequence next(Predicate<String> eligible) {
        for (boolean background : new boolean[] {false, true}) {
            for (Map.Entry<String, Deque<Sequence>> e : byTenant.entrySet()) {
                if (Sequence.background(e.getKey()) == background && eligible.test(e.getKey())) {
                    return e.getValue().peek();
                }
            }
        }
        return null;
    }

    /** Takes {@code s}, a tenant's head, and sends its tenant to the back of the turn order. */
    void started(Sequence s) {
        Deque<Sequence> queue = byTenant.remove(s.tenant());
        queue.poll();
        size--;
        if (!queue.isEmpty()) {
            byTenant.put(s.tenant(), queue); // to the back
        }
    }

    /** Removes {@code s} wherever it waits; whether it was here. */
    boolean remove(Sequence s) {
        Deque<Sequence> queue = byTenant.get(s.tenant());
        if (queue == null || !queue.remove(s)) {
            return false;
        }
        size--;
        if (queue.isEmpty()) {
            byTenant.remove(s.tenant());
        }
        return true;
    }

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** Every waiting sequence, tenant by tenant. */
    Iterator<Sequence> iterator() {
        return byTenant.values().stream().flatMap(Deque::stream).iterator();
    }
}
