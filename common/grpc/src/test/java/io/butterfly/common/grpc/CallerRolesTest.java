package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A service's caller table names every method, or the service does not start; the interceptor takes a call only from
 * the roles its method's entry names, takes anyone for an open entry, and leaves services without a table and callers
 * with TLS off alone.
 */
class CallerRolesTest {

    private static final String WORKER_SERVICE = WorkerServiceGrpc.SERVICE_NAME;

    private static CallerRoles.Builder workerTableWithoutDismiss() {
        return CallerRoles.of(WorkerServiceGrpc.getServiceDescriptor())
                .allow(WorkerServiceGrpc.getAssignPartitionMethod(), NodeRole.COORDINATOR)
                .allow(WorkerServiceGrpc.getReportChecksumsMethod(), NodeRole.COORDINATOR)
                .allow(WorkerServiceGrpc.getApplyValidationMethod(), NodeRole.COORDINATOR)
                .allow(WorkerServiceGrpc.getStepsMethod(), NodeRole.COORDINATOR, NodeRole.WORKER)
                .allow(WorkerServiceGrpc.getExpertsMethod(), NodeRole.WORKER)
                .allow(WorkerServiceGrpc.getHeadsMethod(), NodeRole.WORKER)
                .anyCaller(WorkerServiceGrpc.getReleaseMethod());
    }

    @Test
    void aTableThatLeavesAMethodOutIsRefusedNamingIt() {
        assertThatThrownBy(() -> workerTableWithoutDismiss().build()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining(WorkerServiceGrpc.getDismissMethod().getFullMethodName());
        assertThatThrownBy(() -> workerTableWithoutDismiss().anyCaller(ModelRegistryGrpc.getFetchFileMethod()))
                .as("another service's method").isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> workerTableWithoutDismiss().anyCaller(WorkerServiceGrpc.getStepsMethod()))
                .as("two entries").isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aCallIsTakenOnlyFromTheRolesItsEntryNames() {
        CallerRoles table = workerTableWithoutDismiss().allow(WorkerServiceGrpc.getDismissMethod(), NodeRole.COORDINATOR)
                .build();
        CallerInterceptor interceptor = new CallerInterceptor(true, List.of(table));
        Caller coordinator = Caller.certified(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-0"));
        Caller worker = Caller.certified(new PeerIdentity(NodeRole.WORKER, "worker-1"));
        String dismiss = WorkerServiceGrpc.getDismissMethod().getFullMethodName();

        assertThatCode(() -> interceptor.authorize(coordinator, WORKER_SERVICE, dismiss)).doesNotThrowAnyException();
        assertThatThrownBy(() -> interceptor.authorize(worker, WORKER_SERVICE, dismiss))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ErrorKind.PERMISSION_DENIED);
                    assertThat(e.getMessage()).contains("WorkerService/Dismiss").contains("only from coordinator");
                });
        assertThatThrownBy(() -> interceptor.authorize(Caller.UNIDENTIFIED, WORKER_SERVICE, dismiss))
                .as("a certificate naming no node").isInstanceOf(ButterflyException.class);
        String steps = WorkerServiceGrpc.getStepsMethod().getFullMethodName();
        assertThatCode(() -> interceptor.authorize(worker, WORKER_SERVICE, steps)).doesNotThrowAnyException();
        String release = WorkerServiceGrpc.getReleaseMethod().getFullMethodName();
        assertThatCode(() -> interceptor.authorize(Caller.UNIDENTIFIED, WORKER_SERVICE, release))
                .as("an open entry").doesNotThrowAnyException();
        assertThatCode(() -> interceptor.authorize(worker, "grpc.health.v1.Health", "grpc.health.v1.Health/Check"))
                .as("a service without a table").doesNotThrowAnyException();
        assertThatThrownBy(() -> interceptor.authorize(coordinator, "butterfly.worker.v2.WorkerService",
                "butterfly.worker.v2.WorkerService/Dismiss"))
                .as("a service of Butterfly's packages without a table is refused, not open")
                .isInstanceOf(ButterflyException.class).hasMessageContaining("does not name it");
        assertThatCode(() -> interceptor.authorize(Caller.PLAINTEXT, WORKER_SERVICE, dismiss))
                .as("TLS off: nothing is known of the caller").doesNotThrowAnyException();
    }
}
