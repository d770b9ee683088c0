package io.butterfly.common.grpc;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import java.util.List;

/**
 * Who may call every gRPC method of Butterfly's services, by the role the caller's certificate names
 * (docs/security.md#authorization): the one table {@link CallerInterceptor} enforces on every server before a handler
 * runs. It lives in one place so that one test can hold it against every service of {@code proto/}; a service of
 * Butterfly's packages without a table here is refused whole, not served open.
 */
public final class CallerTables {

    /** Reports from workers, or from coordinators speaking for one (each handler checks whom); outcomes from workers. */
    public static final CallerRoles COORDINATOR = CallerRoles.of(CoordinatorServiceGrpc.getServiceDescriptor())
            .allow(CoordinatorServiceGrpc.getReportLoadMethod(), NodeRole.WORKER, NodeRole.COORDINATOR)
            .allow(CoordinatorServiceGrpc.getHeartbeatMethod(), NodeRole.WORKER, NodeRole.COORDINATOR)
            .allow(CoordinatorServiceGrpc.getHeartbeatStreamMethod(), NodeRole.WORKER, NodeRole.COORDINATOR)
            .allow(CoordinatorServiceGrpc.getStepOutcomesMethod(), NodeRole.WORKER)
            .build();

    /**
     * What changes a worker (assign, verify, dismiss) is a coordinator's to ask; steps come from coordinators (into
     * the first stage) or workers (into a later one: the handler tells which by the stage), releases from either.
     */
    public static final CallerRoles WORKER = CallerRoles.of(WorkerServiceGrpc.getServiceDescriptor())
            .allow(WorkerServiceGrpc.getAssignPartitionMethod(), NodeRole.COORDINATOR)
            .allow(WorkerServiceGrpc.getReportChecksumsMethod(), NodeRole.COORDINATOR)
            .allow(WorkerServiceGrpc.getApplyValidationMethod(), NodeRole.COORDINATOR)
            .allow(WorkerServiceGrpc.getDismissMethod(), NodeRole.COORDINATOR)
            .allow(WorkerServiceGrpc.getStepsMethod(), NodeRole.COORDINATOR, NodeRole.WORKER)
            .allow(WorkerServiceGrpc.getReleaseMethod(), NodeRole.COORDINATOR, NodeRole.WORKER)
            // a stage's worker asks the workers holding its other expert groups (docs/sharding.md)
            .allow(WorkerServiceGrpc.getExpertsMethod(), NodeRole.WORKER)
            // a head-parallel stage's worker asks the workers holding its other head shards (docs/sharding.md)
            .allow(WorkerServiceGrpc.getHeadsMethod(), NodeRole.WORKER)
            .build();

    /**
     * Any node the cluster CA certified: each message answers for itself (a signed envelope from the node it names,
     * checked by the handler against the certificate; a join the admission chain judges), and the membership view is
     * the cluster's to read.
     */
    public static final CallerRoles DISCOVERY = CallerRoles.of(DiscoveryServiceGrpc.getServiceDescriptor())
            .anyCaller(DiscoveryServiceGrpc.getDiscoverMethod())
            .anyCaller(DiscoveryServiceGrpc.getJoinMethod())
            .anyCaller(DiscoveryServiceGrpc.getAcknowledgeJoinMethod())
            .anyCaller(DiscoveryServiceGrpc.getLeaveMethod())
            .anyCaller(DiscoveryServiceGrpc.getHeartbeatMethod())
            .anyCaller(DiscoveryServiceGrpc.getListMembersMethod())
            .build();

    /** Any node the cluster CA certified: what the registry serves is signed and checksummed, and checked by its client. */
    public static final CallerRoles REGISTRY = CallerRoles.of(ModelRegistryGrpc.getServiceDescriptor())
            .anyCaller(ModelRegistryGrpc.getListModelsMethod())
            .anyCaller(ModelRegistryGrpc.getGetManifestMethod())
            .anyCaller(ModelRegistryGrpc.getFetchFileMethod())
            .build();

    /** The package every service of {@code proto/} is in: a service there without a table is refused. */
    public static final String BUTTERFLY_PACKAGE = "butterfly.";

    private CallerTables() {
    }

    /** Every table, one per service of {@code proto/}. */
    public static List<CallerRoles> all() {
        return List.of(COORDINATOR, WORKER, DISCOVERY, REGISTRY);
    }
}
