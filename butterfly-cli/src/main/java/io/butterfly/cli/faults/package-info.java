/**
 * Faults by schedule (as Jepsen's and etcd's robustness tests inject them): a seeded {@link
 * io.butterfly.cli.faults.FaultSchedule} of kills, pauses, partitions and clock skews, a steady request load beside it
 * ({@link io.butterfly.cli.faults.SteadyLoad}), what the cluster said meanwhile ({@link
 * io.butterfly.cli.faults.History}) and the checker's {@link io.butterfly.cli.faults.Verdict}. Run against processes
 * by {@code ./butterfly fault-schedule}, against the cluster in one JVM by the integration tests.
 */
package io.butterfly.cli.faults;
