package io.butterfly.cli.cluster;

/**
 * Runs a clean-up once, when closed or when the JVM shuts down first (Ctrl-C), unless disarmed: what a shell
 * script's {@code trap ... EXIT} does.
 */
public final class ExitGuard implements AutoCloseable {

    private final Runnable cleanUp;
    private final Thread hook;
    private boolean armed = true;

    private ExitGuard(Runnable cleanUp) {
        this.cleanUp = cleanUp;
        this.hook = new Thread(this::runOnce, "exit-guard");
    }

    public static ExitGuard arm(Runnable cleanUp) {
        ExitGuard guard = new ExitGuard(cleanUp);
        Runtime.getRuntime().addShutdownHook(guard.hook);
        return guard;
    }

    /** The clean-up is no longer needed. */
    public synchronized void disarm() {
        armed = false;
    }

    @Override
    public void close() {
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) { // the hook runs (or ran) it
            return;
        }
        runOnce();
    }

    private synchronized void runOnce() {
        if (armed) {
            armed = false;
            cleanUp.run();
        }
    }
}
