package io.butterfly.discovery.config;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.discovery.SignedDiscoveryClient;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.grpc.ManagedChannel;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;
import org.springframework.stereotype.Component;

/**
 * Once the gRPC server listens, discovery asks itself one (read-only) discovery request through loopback,
 * with a throwaway identity. A fresh JVM answered its first requests in seconds (envelope checks, Ed25519,
 * the membership store and gRPC all cold), which every node paid while joining; now that cost is paid
 * while nodes are still starting, and a server that cannot answer its own request says so in the log.
 */
@Component
class SelfDiscoveryWarmUp implements ApplicationListener<GrpcServerStartedEvent> {

    private static final Logger log = LoggerFactory.getLogger(SelfDiscoveryWarmUp.class);

    private final DiscoveryProperties props;

    SelfDiscoveryWarmUp(DiscoveryProperties props) {
        this.props = props;
    }

    @Override
    public void onApplicationEvent(GrpcServerStartedEvent event) {
        Thread t = new Thread(() -> warmUp(event.getPort()), "discovery-warm-up");
        t.setDaemon(true);
        t.start();
    }

    private void warmUp(int port) {
        ManagedChannel channel = GrpcChannels.open("127.0.0.1", port);
        long started = System.nanoTime();
        try {
            new SignedDiscoveryClient(channel, NodeIdentity.ephemeral(), "discovery-warm-up", props.clusterName(),
                    props.features(), Clock.systemUTC(), new RetryPolicy(100, 1_000))
                    .discover(NodeCapabilities.getDefaultInstance());
            log.info("warm-up: answered its own discovery request in {} ms", (System.nanoTime() - started) / 1_000_000);
        } catch (RuntimeException e) {
            log.warn("warm-up: its own discovery request failed: {}", e.toString());
        } finally {
            GrpcChannels.close(channel);
        }
    }
}
