package io.butterfly.discovery.membership;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;

/** Whether a seed answers. */
@FunctionalInterface
public interface SeedProbe {

    boolean reachable(StaticSeed seed);

    /** A TCP connect to the seed's gRPC port within {@code timeout}: cheap, and needs nothing from the seed. */
    static SeedProbe tcpConnect(Duration timeout) {
        int millis = (int) Math.max(1, timeout.toMillis());
        return seed -> {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(seed.host(), seed.grpcPort()), millis);
                return true;
            } catch (IOException e) {
                return false;
            }
        };
    }
}
