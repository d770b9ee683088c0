package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.TaskRecord;

/**
 * Who asks, as far as tasks go: the id of the API key the request came with (never the key), and whether it is an
 * admin key. A task is its starting key's: that key and admin keys see it (its tokens, its stream, its record);
 * another key is told it does not exist. A task started without a key (no keys set) is anyone's.
 *
 * @param keyId the key's id, or null: no key (none are set, or the endpoint takes requests without one)
 */
public record Requester(String keyId, boolean admin) {

    /** A request without an API key. */
    public static final Requester ANONYMOUS = new Requester(null, false);

    /** Whether this requester may see task {@code t}. */
    public boolean maySee(TaskRecord t) {
        String owner = t.request() == null ? null : t.request().ownerKey();
        return admin || owner == null || owner.equals(keyId);
    }
}
