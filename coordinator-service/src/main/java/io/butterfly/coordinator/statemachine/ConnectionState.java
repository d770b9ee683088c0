package io.butterfly.coordinator.statemachine;

/** A node-to-node connection's lifecycle (docs/state-machines.md §2.4). */
public enum ConnectionState {
    CONNECTING, ESTABLISHED, ACTIVE, IDLE, SUSPECTED, TERMINATED
}
