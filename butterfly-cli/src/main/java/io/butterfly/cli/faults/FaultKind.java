package io.butterfly.cli.faults;

/** What a fault does to its target, and what ends it. */
public enum FaultKind {
    /** SIGKILL; ended by starting it again with the same data (a worker comes back as a spare). */
    KILL,
    /** SIGSTOP; ended by SIGCONT: whatever it was doing waits, then goes on. */
    PAUSE,
    /** Cut off the other services; ended by healing the cut. */
    PARTITION,
    /** Its wall clock moved by {@link Fault#skewMs()}; ended by setting it right. */
    CLOCK_SKEW
}
