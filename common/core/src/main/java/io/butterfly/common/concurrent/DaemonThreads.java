package io.butterfly.common.concurrent;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The one way Butterfly makes its background threads: daemons (a service's threads never keep its JVM up once Spring
 * has stopped), each with a name that says what it does, as thread dumps and log lines show it.
 */
public final class DaemonThreads {

    private DaemonThreads() {
    }

    /** Daemon threads all named {@code name} (for an executor of one thread, or a thread made once). */
    public static ThreadFactory named(String name) {
        return r -> daemon(r, name);
    }

    /** Daemon threads named {@code prefix-1}, {@code prefix-2}, ... (for a pool). */
    public static ThreadFactory numbered(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> daemon(r, prefix + "-" + n.incrementAndGet());
    }

    /** A daemon thread named {@code name} running {@code work}, started. */
    public static Thread start(String name, Runnable work) {
        Thread t = daemon(work, name);
        t.start();
        return t;
    }

    private static Thread daemon(Runnable work, String name) {
        Thread t = new Thread(work, name);
        t.setDaemon(true);
        return t;
    }
}
