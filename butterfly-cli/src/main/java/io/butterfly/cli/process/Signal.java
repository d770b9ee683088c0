package io.butterfly.cli.process;

/** The signals a supervisor sends its services. */
public enum Signal {
    /** Pauses the process (it keeps its sockets: a hung process, as its peers see it). */
    STOP,
    /** Resumes a paused process. */
    CONT,
    /** Asks the process to shut down (Spring's graceful shutdown, writing a class-data archive if it records one). */
    TERM,
    /** Ends the process at once. */
    KILL
}
