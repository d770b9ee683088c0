package io.butterfly.coordinator.gateway.discovery;

import io.butterfly.common.discovery.DiscoveryMembership;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.reconcile.WorkerDirectory;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.ProtocolVersion;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Discovery over gRPC: the workers it admitted, for the bootstrap, and this coordinator's own membership, with the
 * same signed handshake, heartbeats and leave as a worker ({@link DiscoveryMembership}). Bootstrap does not wait
 * for the membership: it only reads the worker list, so a refused coordinator is logged and the cluster still forms.
 */
public final class DiscoveryGateway implements WorkerDirectory, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryGateway.class);
    private static final long HEARTBEAT_MILLIS = 5_000;

    /**
     * This coordinator as discovery lists it.
     *
     * @param dataDir where its node identity (the key it signs its join with) is kept across restarts
     */
    public record Self(String nodeId, String clusterName, String advertiseHost, int grpcPort, int httpPort,
                       Path dataDir) {
    }

    private final ManagedChannel channel;
    private final DiscoveryMembership membership;

    /** @param channel to discovery, owned from now on (closed with this gateway) */
    public DiscoveryGateway(ManagedChannel channel, Self self) {
        this.channel = channel;
        Member member = Member.newBuilder()
                .setNodeId(self.nodeId())
                .setRole(NodeRole.COORDINATOR)
                .setHost(self.advertiseHost())
                .setGrpcPort(self.grpcPort())
                .setHttpPort(self.httpPort())
                .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                        : getClass().getPackage().getImplementationVersion())
                .setCapabilities(NodeCapabilities.newBuilder()
                        .setCpuCores(Runtime.getRuntime().availableProcessors())
                        .setMemoryBytes(physicalMemory())
                        .setDevice("cpu()"))
                .build();
        this.membership = new DiscoveryMembership(channel, self.dataDir(), self.nodeId(), self.clusterName(), 0,
                HEARTBEAT_MILLIS, () -> member);
    }

    /** The protocol version this coordinator speaks (its signed envelopes', offered at join), as major.minor.patch. */
    public static String protocolVersion() {
        ProtocolVersion v = ControlEnvelopes.CURRENT_VERSION;
        return v.getMajor() + "." + v.getMinor() + "." + v.getPatch();
    }

    /** Joins discovery in the background (and keeps heartbeating) once the coordinator serves. */
    public void register() {
        membership.start();
    }

    @Override
    public Optional<List<NodeInfo>> joinedWorkers() {
        try {
            return Optional.of(DiscoveryServiceGrpc.newBlockingStub(channel).withDeadlineAfter(2, TimeUnit.SECONDS)
                    .listMembers(ListMembersRequest.newBuilder().setRole(NodeRole.WORKER).build())
                    .getMembersList().stream().map(DiscoveryGateway::toNodeInfo).toList());
        } catch (StatusRuntimeException e) {
            log.debug("discovery not reachable: {}", e.getStatus());
            return Optional.empty();
        }
    }

    static NodeInfo toNodeInfo(Member m) {
        return new NodeInfo(m.getNodeId(), "worker", m.getHost(), m.getGrpcPort(), m.getHttpPort(),
                m.getCapabilities().getCpuCores(), usableMemory(m.getCapabilities()),
                m.getCapabilities().getMeasuredGflops(), m.getCapabilities().getDevice(),
                m.getCapabilities().getWeightBytes());
    }

    /** Memory a worker offers for its partition: its limit where it set one, else all its memory. */
    static long usableMemory(NodeCapabilities c) {
        long limit = c.getMemoryLimitBytes();
        return limit > 0 ? Math.min(limit, c.getMemoryBytes()) : c.getMemoryBytes();
    }

    private static long physicalMemory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getTotalMemorySize();
        }
        return Runtime.getRuntime().maxMemory();
    }

    /** Leaves discovery. */
    @Override
    public void close() {
        membership.stop();
        GrpcChannels.close(channel);
    }
}
