package io.butterfly.worker.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.grpc.CallerRoles;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The worker's caller table: what changes a worker, Dismiss included, is a coordinator's to ask. */
class WorkerCallersTest {

    @Test
    void onlyCoordinatorsAssignVerifyOrDismissAndStepsComeFromCoordinatorsOrWorkers() {
        CallerRoles table = WorkerGrpcService.callers(); // names every method, or throws
        Set<NodeRole> coordinators = Set.of(NodeRole.COORDINATOR);
        assertThat(table.rolesFor(WorkerServiceGrpc.getDismissMethod().getFullMethodName())).isEqualTo(coordinators);
        assertThat(table.rolesFor(WorkerServiceGrpc.getAssignPartitionMethod().getFullMethodName())).isEqualTo(coordinators);
        assertThat(table.rolesFor(WorkerServiceGrpc.getReportChecksumsMethod().getFullMethodName())).isEqualTo(coordinators);
        assertThat(table.rolesFor(WorkerServiceGrpc.getApplyValidationMethod().getFullMethodName())).isEqualTo(coordinators);
        assertThat(table.rolesFor(WorkerServiceGrpc.getStepsMethod().getFullMethodName()))
                .containsExactlyInAnyOrder(NodeRole.COORDINATOR, NodeRole.WORKER);
        assertThat(table.rolesFor(WorkerServiceGrpc.getReleaseMethod().getFullMethodName()))
                .containsExactlyInAnyOrder(NodeRole.COORDINATOR, NodeRole.WORKER);
    }
}
