package io.butterfly.common.identity;

import java.util.Locale;
import java.util.Optional;

/** What a node is in the cluster; its certificate names it ({@link PeerIdentity}). */
public enum NodeRole {
    COORDINATOR,
    WORKER,
    DISCOVERY,
    REGISTRY;

    /** As certificates and process lists write it: {@code worker}. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** The role written {@code label}, if any. */
    public static Optional<NodeRole> ofLabel(String label) {
        for (NodeRole role : values()) {
            if (role.label().equals(label)) {
                return Optional.of(role);
            }
        }
        return Optional.empty();
    }
}
