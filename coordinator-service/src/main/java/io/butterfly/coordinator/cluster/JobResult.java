package io.butterfly.coordinator.cluster;

import java.util.Arrays;

/**
 * A client's RESULT for one batch, as the control log keeps it (docs/jobs.md): once per (step, position).
 *
 * @param step       the step it names
 * @param position   the batch's first dataset position
 * @param data       the client's bytes, as sent
 * @param recordedAtMs when it was committed
 */
public record JobResult(long step, long position, byte[] data, long recordedAtMs) {

    public JobResult {
        data = data.clone();
    }

    @Override
    public byte[] data() {
        return data.clone();
    }

    /** Its length without a copy. */
    public int size() {
        return data.length;
    }

    // by value: replicas and snapshots compare states
    @Override
    public boolean equals(Object o) {
        return o instanceof JobResult r && r.step == step && r.position == position && r.recordedAtMs == recordedAtMs
                && Arrays.equals(r.data, data);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(step) * 31 + Long.hashCode(position) * 17 + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
        return "JobResult[step=" + Long.toUnsignedString(step) + ", position=" + Long.toUnsignedString(position)
                + ", " + data.length + " bytes]";
    }
}
