package io.butterfly.testsupport;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Free ports for tests that must name a port before anything binds it (a Raft peer list, a Hazelcast join list,
 * a service process started seconds later). Ports come from [{@value #FROM}, {@value #TO}): below the kernel's
 * ephemeral range (32768-60999), where a port may meanwhile become the local end of some outgoing connection, and
 * clear of the launcher's 8080-9190. Each JVM starts at a random place in the range and moves on, so the ports it
 * hands out are distinct and parallel builds rarely meet.
 */
public final class Ports {

    public static final int FROM = 20000;
    public static final int TO = 32000;

    private static final AtomicInteger NEXT = new AtomicInteger(FROM + ThreadLocalRandom.current().nextInt(TO - FROM));

    private Ports() {
    }

    /** A port nothing listened on a moment ago. */
    public static int free() {
        for (int tries = 0; tries < TO - FROM; tries++) {
            int port = FROM + Math.floorMod(NEXT.getAndIncrement() - FROM, TO - FROM);
            try (ServerSocket s = new ServerSocket()) {
                s.setReuseAddress(false);
                s.bind(new InetSocketAddress(port));
                return port;
            } catch (IOException busy) {
                // taken: try the next one
            }
        }
        throw new IllegalStateException("no free port in " + FROM + "-" + TO);
    }

    /** {@code n} distinct free ports. */
    public static List<Integer> free(int n) {
        List<Integer> ports = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            ports.add(free());
        }
        return ports;
    }

    /**
     * {@code start} applied to {@code n} free ports, and again to new ones if it failed because a port was taken
     * meanwhile (another process may bind it between {@link #free()} and {@code start}). {@code start} must release
     * what it started before it throws.
     */
    public static <T> T startOnFreePorts(int n, Function<List<Integer>, T> start) {
        for (int attempt = 1; ; attempt++) {
            try {
                return start.apply(free(n));
            } catch (RuntimeException e) {
                if (attempt == 3 || !taken(e)) {
                    throw e;
                }
            }
        }
    }

    /** Whether {@code e} (or a cause) says a port was taken. */
    public static boolean taken(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException || String.valueOf(t.getMessage()).contains("Address already in use")) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@code action}'s result, with {@code port} held meanwhile by a socket bound on 127.0.0.1 but never listening:
     * connections to it are refused, and no other process can take it. Fails with a {@link BindException} cause
     * (which {@link #startOnFreePorts} retries) if the port was taken already.
     */
    public static <T> T whileHeld(int port, Supplier<T> action) {
        try (Socket held = new Socket()) {
            held.bind(new InetSocketAddress("127.0.0.1", port));
            return action.get();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
