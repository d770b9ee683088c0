package io.butterfly.worker.engine;

import io.butterfly.common.concurrent.DaemonThreads;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;

/**
 * The one thread of a worker that computes with the engine: its loads and forward passes run here, whichever thread
 * asked for them. A worker owns one ({@link ExecutorOptions#engineThread}, a bean of the worker's context, closed with
 * it), so the workers of an in-process cluster each compute on their own, as separate processes do.
 *
 * <p>Why one: PyTorch's intra-op parallelism on CPU is OpenMP, and libgomp keeps a team of helper threads for every
 * thread that starts parallel work. Once the process holds more such threads than there are cores, libgomp stops
 * spinning at its barriers and puts the threads to sleep (its "throttled" spin), so every one of a step's hundreds of
 * operations paid a sleep and a wake-up. With forwards on whichever gRPC thread served the step's stream and the load
 * on another, a worker on two cores ran a batched decode step of 16 sequences in 135-190 ms (about 90% of one core
 * busy, 12 000 context switches a second), with two engine threads no faster than with one; the same step in one
 * thread of a plain process took 92 ms.
 *
 * <p>Work that need not be waited for is queued with {@link #execute}: a pipeline step runs here from its arrival to
 * its hand-off, so no other thread wakes up for it in between.
 */
public final class EngineThread implements AutoCloseable {

    private final ExecutorService executor;
    /** The executor's one thread, for calls made on it. */
    private volatile Thread thread;

    private EngineThread(String name) {
        ThreadFactory daemon = DaemonThreads.named(name);
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = daemon.newThread(r);
            thread = t;
            return t;
        });
    }

    /** An engine thread named {@code name} (started with its first work), until {@link #close}. */
    public static EngineThread named(String name) {
        return new EngineThread(name);
    }

    /**
     * Queues {@code work} for the engine thread, after what is queued before it; returns at once.
     *
     * @throws java.util.concurrent.RejectedExecutionException once closed
     */
    public void execute(Runnable work) {
        executor.execute(work);
    }

    /** Runs {@code work} on this engine thread and returns its result (at once if called there). */
    public <T, E extends Exception> T call(EngineWork<T, E> work) throws E {
        if (Thread.currentThread() == thread) {
            return work.run();
        }
        Future<T> result = executor.submit((Callable<T>) work::run);
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return result.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the work runs on regardless: wait for it, as a call on this thread would
                }
            }
        } catch (ExecutionException e) {
            throw EngineThread.<E>rethrow(e.getCause());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Runs {@code work} on {@code thread}, or on the calling thread when there is none (a tool or a test computing
     * from its own thread, {@link ExecutorOptions#engineThread} null).
     */
    static <T, E extends Exception> T on(EngineThread thread, EngineWork<T, E> work) throws E {
        return thread == null ? work.run() : thread.call(work);
    }

    /** Takes no more work; what is queued still runs, then the thread ends. */
    @Override
    public void close() {
        executor.shutdown();
    }

    @SuppressWarnings("unchecked")
    private static <E extends Exception> RuntimeException rethrow(Throwable cause) throws E {
        if (cause instanceof RuntimeException r) {
            throw r;
        }
        if (cause instanceof Error err) {
            throw err;
        }
        throw (E) cause;
    }

    /** Work for the engine thread, which may throw {@code E}. */
    @FunctionalInterface
    public interface EngineWork<T, E extends Exception> {
        T run() throws E;
    }
}
