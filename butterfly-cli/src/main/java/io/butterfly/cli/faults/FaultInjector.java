package io.butterfly.cli.faults;

/** Does a fault to a cluster and ends it: to processes with signals, to the cluster in one JVM through its harness. */
public interface FaultInjector {

    /** Starts the fault. */
    void inject(Fault fault) throws Exception;

    /** Ends it: starts a killed service again, resumes a paused one, heals a cut, sets a clock right. */
    void end(Fault fault) throws Exception;
}
