package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;

/** A node asking for another cluster is refused (docs/bootstrap-protocol.md §8.1 ClusterNameMismatch; not retryable). */
public final class ClusterNameCheck implements AdmissionCheck {

    private final String clusterName;

    public ClusterNameCheck(String clusterName) {
        this.clusterName = clusterName;
    }

    @Override
    public void check(JoinAttempt attempt) {
        String requested = attempt.request().clusterName();
        if (!clusterName.equals(requested)) {
            throw new AdmissionException(ErrorCode.CLUSTER_NAME_MISMATCH, ErrorKind.FAILED_PRECONDITION,
                    "cluster name '" + requested + "' does not match '" + clusterName + "'");
        }
    }
}
