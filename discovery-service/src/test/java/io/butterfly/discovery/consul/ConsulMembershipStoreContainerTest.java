package io.butterfly.discovery.consul;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.DiscoveryApplication;
import io.butterfly.discovery.api.grpc.ControlMessages;
import io.butterfly.discovery.api.grpc.NodeCapabilitiesJson;
import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.membership.MemberState;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipRegistry;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.proto.common.v1.NodeCapabilities;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.cloud.consul.ConsulAutoConfiguration;
import org.springframework.cloud.consul.ConsulClient;
import org.springframework.cloud.consul.ConsulProperties;
import org.springframework.cloud.consul.model.http.agent.NewService;
import org.springframework.context.ConfigurableApplicationContext;
import org.testcontainers.consul.ConsulContainer;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * The consul backend against a real Consul agent (Testcontainers; skipped where there is no Docker): the listing
 * is the catalog filtered by the {@code cluster:<name>} tag, and the discovery service itself, run with the
 * {@code consul} profile, registers with the tags and metadata the Consul UI shows.
 */
@Testcontainers(disabledWithoutDocker = true)
class ConsulMembershipStoreContainerTest {

    @Container
    static final ConsulContainer CONSUL = new ConsulContainer("hashicorp/consul:1.20");

    static ConsulClient client;

    @TempDir
    Path dataDir;

    @BeforeAll
    static void connect() {
        ConsulProperties props = new ConsulProperties();
        props.setHost(CONSUL.getHost());
        props.setPort(CONSUL.getMappedPort(8500));
        client = ConsulAutoConfiguration.createNewConsulClient(props);
    }

    private static void register(String id, String service, String cluster, Map<String, String> meta) {
        NewService s = new NewService();
        s.setId(id);
        s.setName(service);
        s.setAddress("10.0.0.7");
        s.setPort(8090);
        s.setTags(List.of("cluster:" + cluster, "version:1.0"));
        s.setMeta(meta);
        client.agentServiceRegister(null, s);
    }

    @Test
    void listsTheCatalogEntriesTaggedWithThisCluster() {
        Capabilities caps = ControlMessages.capabilities(
                NodeCapabilities.newBuilder().setCpuCores(8).setMemoryBytes(16L << 30).setMeasuredGflops(40).build());
        register("worker-7", "worker-service", "butterfly",
                Map.of("node_id", "worker-7", "role", "worker", "grpc_port", "9097",
                        "capabilities", new NodeCapabilitiesJson().toJson(caps)));
        register("worker-other", "worker-service", "someone-else", Map.of("node_id", "worker-other", "role", "worker"));

        ConsulMembershipStore store = new ConsulMembershipStore(client, "butterfly", new MembershipRegistry(), new NodeCapabilitiesJson());
        List<MemberView> workers = store.members("worker");
        assertEquals(List.of("worker-7"), workers.stream().map(MemberView::nodeId).toList(), "only this cluster's tag");
        MemberView w = workers.get(0);
        assertEquals("10.0.0.7", w.host());
        assertEquals(9097, w.grpcPort());
        assertEquals(8090, w.httpPort());
        assertEquals("1.0", w.version());
        assertEquals(caps, w.capabilities());
        assertEquals(MemberState.PASSING, w.state(), "no checks registered: passing");
        assertNull(w.publicKeyHex(), "registered in Consul, not joined through discovery");
    }

    @Test
    void theDiscoveryServiceRegistersItselfUnderTheConsulProfile() throws InterruptedException {
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(DiscoveryApplication.class)
                .profiles("consul")
                .run("--server.port=0", "--spring.grpc.server.port=0", "--butterfly.discovery.data-dir=" + dataDir,
                        "--spring.cloud.consul.host=" + CONSUL.getHost(),
                        "--spring.cloud.consul.port=" + CONSUL.getMappedPort(8500))) {
            MembershipStore store = ctx.getBean(MembershipStore.class);
            assertInstanceOf(ConsulMembershipStore.class, store);
            Optional<MemberView> self = Optional.empty();
            for (int i = 0; i < 50 && self.isEmpty(); i++) {
                self = store.members("discovery").stream().filter(m -> m.nodeId().equals("discovery-0")).findFirst();
                Thread.sleep(200);
            }
            assertTrue(self.isPresent(), "discovery-0 is in the catalog with tag cluster:butterfly");
            assertEquals("1.0", self.get().version());
        }
    }
}
