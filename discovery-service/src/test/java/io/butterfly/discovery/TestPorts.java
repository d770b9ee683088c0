package io.butterfly.discovery;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Free ports for tests that must name a port before anything binds it: an embedded Hazelcast member binds exactly
 * the port it is given (no auto-increment, and the join list names it, so 0 will not do).
 */
public final class TestPorts {

    private TestPorts() {
    }

    /**
     * {@code n} distinct ports that were free a moment ago: all are held until the last is picked, since a port
     * opened and closed again may be handed out again by the very next pick.
     */
    public static List<Integer> freePorts(int n) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                held.add(new ServerSocket(0));
            }
            return held.stream().map(ServerSocket::getLocalPort).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing an unused listening socket; nothing to do
                }
            }
        }
    }

    /**
     * {@code start} applied to {@code n} fresh ports, and again to new ones if it fails because a port was taken:
     * a port is only known free until {@link #freePorts} closes it, and another process may bind it before
     * {@code start} does. {@code start} must release what it started before it throws.
     */
    public static <T> T startOnFreePorts(int n, Function<List<Integer>, T> start) {
        for (int attempt = 1; ; attempt++) {
            try {
                return start.apply(freePorts(n));
            } catch (RuntimeException e) {
                boolean portTaken = Stream.iterate((Throwable) e, t -> t != null, Throwable::getCause)
                        .anyMatch(BindException.class::isInstance);
                if (attempt == 3 || !portTaken) {
                    throw e;
                }
            }
        }
    }

    /**
     * {@code action}'s result, with {@code port} held meanwhile by a socket bound on 127.0.0.1 but never listening:
     * connections to it are refused, and no other process can take it. Fails with a {@link BindException} (which
     * {@link #startOnFreePorts} retries) if the port was taken already.
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
