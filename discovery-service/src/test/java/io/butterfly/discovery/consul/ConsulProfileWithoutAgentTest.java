package io.butterfly.discovery.consul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.DiscoveryApplication;
import io.butterfly.testsupport.Ports;
import io.butterfly.discovery.hazelcast.HazelcastMembershipStore;
import io.butterfly.discovery.membership.MemberState;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.consul.ConsulClient;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Runs where there is no Consul: the default profile never creates a Consul client (and uses the embedded
 * backend); the consul profile starts anyway (fail-fast off) and lists the members that joined this replica.
 */
class ConsulProfileWithoutAgentTest {

    @TempDir
    Path dataDir;

    /**
     * A port on 127.0.0.1 nobody listens on, for as long as the caller holds the socket: it is bound but never
     * listens, so connections to it are refused, and no other process can bind (and listen on) it meanwhile.
     * (A port found free and closed again could be taken by another process, even a real agent.)
     */
    private static Socket closedPort() throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress("127.0.0.1", 0));
        return s;
    }

    @Test
    void theDefaultProfileUsesTheEmbeddedBackendAndNoConsul() {
        try (ConfigurableApplicationContext ctx = runWithFreeHazelcastPort()) {
            assertInstanceOf(HazelcastMembershipStore.class, ctx.getBean(MembershipStore.class));
            assertEquals(0, ctx.getBeanNamesForType(ConsulClient.class).length, "nothing talks to Consul by default");
        }
    }

    /** The default profile's context, started again on another Hazelcast port if its port was taken meanwhile. */
    private ConfigurableApplicationContext runWithFreeHazelcastPort() {
        return Ports.startOnFreePorts(1, ports -> new SpringApplicationBuilder(DiscoveryApplication.class)
                .run("--server.port=0", "--spring.grpc.server.port=0", "--butterfly.tls.enabled=false", "--butterfly.discovery.data-dir=" + dataDir,
                        "--butterfly.discovery.hazelcast.port=" + ports.get(0)));
    }

    @Test
    void theConsulProfileStartsWithoutAnAgentAndListsJoinedMembers() throws IOException {
        try (Socket noAgent = closedPort();
             ConfigurableApplicationContext ctx = new SpringApplicationBuilder(DiscoveryApplication.class)
                     .profiles("consul")
                     .run("--server.port=0", "--spring.grpc.server.port=0", "--butterfly.tls.enabled=false", "--butterfly.discovery.data-dir=" + dataDir,
                             "--spring.cloud.consul.host=127.0.0.1", "--spring.cloud.consul.port=" + noAgent.getLocalPort())) {
            MembershipStore store = ctx.getBean(MembershipStore.class);
            assertInstanceOf(ConsulMembershipStore.class, store);
            assertTrue(store.members(null).isEmpty());
            long now = System.currentTimeMillis(); // joined members expire after member-ttl without being seen
            store.admit(new MemberView("worker-0", "worker", "127.0.0.1", 9090, 8090, "0.1.0", now, now, null, "ab".repeat(32), false));
            store.acknowledge("worker-0", now);
            List<MemberView> listed = store.members("worker");
            assertEquals(List.of("worker-0"), listed.stream().map(MemberView::nodeId).toList());
            assertEquals(MemberState.ACTIVE, listed.get(0).state());
        }
    }
}
