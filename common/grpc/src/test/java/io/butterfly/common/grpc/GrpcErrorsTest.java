package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.grpc.Status;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

class GrpcErrorsTest {

    @Test
    void everyErrorCodeIsTheProtocolsCodeOfTheSameNameAndNumber() {
        for (ErrorCode code : ErrorCode.values()) {
            io.butterfly.proto.common.v1.ErrorCode wire = GrpcErrors.toProto(code);
            assertThat(wire).as(code.name()).isNotNull();
            assertThat(wire.name()).isEqualTo(code.name());
            assertThat(wire.getNumber()).isEqualTo(code.number());
            assertThat(GrpcErrors.fromProto(wire)).isEqualTo(code);
        }
        assertThat(ErrorCode.values()).hasSize(io.butterfly.proto.common.v1.ErrorCode.values().length - 1); // UNRECOGNIZED
    }

    @Test
    void everyErrorKindIsAGrpcStatusAndBack() {
        for (ErrorKind kind : ErrorKind.values()) {
            assertThat(GrpcErrors.kindOf(GrpcErrors.statusCode(kind))).isEqualTo(kind);
        }
        assertThat(Arrays.stream(Status.Code.values()).map(GrpcErrors::kindOf)).doesNotContainNull();
        assertThat(GrpcErrors.kindOf(Status.Code.OK)).isEqualTo(ErrorKind.UNKNOWN);
    }

    @Test
    void anErrorCrossesAGrpcStatusWithItsCodeKindAndContext() {
        ButterflyException sent = new ButterflyException(ErrorCode.JOIN_RATE_LIMITED, ErrorKind.RESOURCE_EXHAUSTED,
                "slow down", Map.of("retry_after_ms", "250"), null);

        var status = GrpcErrors.toStatus(sent);
        assertThat(status.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(GrpcErrors.errorInfo(status).orElseThrow().getMetadataMap())
                .containsEntry("code", "0x3004").containsEntry("retry_after_ms", "250");

        ButterflyException received = GrpcErrors.fromRemote(status, "join");
        assertThat(received.code()).isEqualTo(ErrorCode.JOIN_RATE_LIMITED);
        assertThat(received.kind()).isEqualTo(ErrorKind.RESOURCE_EXHAUSTED);
        assertThat(received.getMessage()).isEqualTo("join: slow down");
        assertThat(received.context()).containsEntry("retry_after_ms", "250");
    }

    @Test
    void anUnknownReasonReadsAsUnspecified() {
        assertThat(ErrorCode.named("NO_SUCH_CODE")).isEqualTo(ErrorCode.ERROR_CODE_UNSPECIFIED);
        assertThat(ErrorCode.named(null)).isEqualTo(ErrorCode.ERROR_CODE_UNSPECIFIED);
    }
}
