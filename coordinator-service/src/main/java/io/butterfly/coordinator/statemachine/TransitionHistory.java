package io.butterfly.coordinator.statemachine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;

/** The last {@code capacity} applied transitions, oldest dropped first; thread-safe. */
public final class TransitionHistory {

    private final int capacity;
    private final Deque<TransitionRecord> records = new ArrayDeque<>();

    public TransitionHistory(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be positive");
        }
        this.capacity = capacity;
    }

    public synchronized void add(TransitionRecord record) {
        if (records.size() == capacity) {
            records.removeFirst();
        }
        records.addLast(record);
    }

    /** The newest {@code limit} records, newest first. */
    public synchronized List<TransitionRecord> latest(int limit) {
        List<TransitionRecord> out = new ArrayList<>(Math.min(Math.max(limit, 0), records.size()));
        var it = records.descendingIterator();
        while (it.hasNext() && out.size() < limit) {
            out.add(it.next());
        }
        return out;
    }
}
