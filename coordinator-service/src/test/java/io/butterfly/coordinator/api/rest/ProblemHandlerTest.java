package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.planning.InfeasiblePlanException;
import io.butterfly.coordinator.reconcile.DrainRefusedException;
import io.butterfly.common.error.ErrorCode;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;

/** A request reaches a stage only once validated: a stage's refusal is the cluster's failure, not the client's. */
class ProblemHandlerTest {

    private final ProblemHandler handler = new ProblemHandler();

    @Test
    void stageFailuresAre5xxNever4xx() {
        assertThat(statusOf(ErrorKind.INVALID_ARGUMENT)).as("a stage refusing a corrupt activation").isEqualTo(502);
        assertThat(statusOf(ErrorKind.DATA_LOSS)).isEqualTo(502);
        assertThat(statusOf(ErrorKind.INTERNAL)).isEqualTo(502);
        assertThat(statusOf(ErrorKind.FAILED_PRECONDITION)).as("no partition ready yet: retry").isEqualTo(503);
        assertThat(statusOf(ErrorKind.NOT_FOUND)).isEqualTo(503);
        assertThat(statusOf(ErrorKind.UNAVAILABLE)).isEqualTo(503);
        assertThat(statusOf(ErrorKind.DEADLINE_EXCEEDED)).isEqualTo(503);
        assertThat(statusOf(ErrorKind.RESOURCE_EXHAUSTED)).isEqualTo(429);
    }

    @Test
    void aRefusedDrainIsAConflictNamingNeedAndCapacity() {
        ProblemDetail p = handler.drainRefused(new DrainRefusedException("draining 'w1' would leave ...",
                new InfeasiblePlanException("InsufficientResources: ...", 400, 250)));
        assertThat(p.getStatus()).isEqualTo(409);
        assertThat(p.getProperties()).containsEntry("error_code", "InsufficientResources")
                .containsEntry("required_bytes", 400L).containsEntry("available_bytes", 250L);
        assertThat(handler.drainRefused(new DrainRefusedException("the cluster is SHUTDOWN")).getProperties()).isNull();
    }

    @Test
    void anUnexpectedExceptionIsAProblemWithoutItsTrace() {
        ResponseEntity<ProblemDetail> r = handler.unexpected(new IllegalStateException("secret detail"));
        assertThat(r.getStatusCode().value()).isEqualTo(500);
        assertThat(r.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        assertThat(r.getBody().getDetail()).isEqualTo("internal error: IllegalStateException").doesNotContain("secret");
    }

    @Test
    void retryableRefusalsSayWhenToRetry() {
        ResponseEntity<ProblemDetail> full = handler.cluster(new ButterflyException(ErrorCode.INSUFFICIENT_MEMORY,
                ErrorKind.RESOURCE_EXHAUSTED, "kv cache budget spent"));
        assertThat(full.getStatusCode().value()).isEqualTo(429);
        assertThat(full.getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        assertThat(full.getBody().getProperties()).containsEntry("error_code", "INSUFFICIENT_MEMORY");
        assertThat(handler.cluster(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "bug"))
                .getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isNull();
        assertThat(handler.cluster(new ButterflyException(ErrorCode.TIMEOUT, ErrorKind.DEADLINE_EXCEEDED, "slow"))
                .getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).as("a step that timed out is no reason to hurry back").isNull();
        ResponseEntity<ProblemDetail> never = handler.cluster(new ButterflyException(ErrorCode.INSUFFICIENT_MEMORY,
                ErrorKind.OUT_OF_RANGE, "needs more than the whole budget"));
        assertThat(never.getStatusCode().value()).isEqualTo(413);
        assertThat(never.getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isNull();
        assertThat(never.getBody().getProperties()).containsEntry("field", "max_tokens");

        ResponseEntity<ProblemDetail> busy = handler.tooManyTasks(new QueueFullException("256 requests are waiting"));
        assertThat(busy.getStatusCode().value()).isEqualTo(429);
        assertThat(busy.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        assertThat(busy.getHeaders().getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("1");
        // A key that spent its tokens per minute is told when its bucket refills.
        assertThat(handler.tooManyTasks(new QueueFullException("this API key spent its tokens", 17)).getHeaders()
                .getFirst(HttpHeaders.RETRY_AFTER)).isEqualTo("17");
        assertThat(busy.getBody().getTitle()).isEqualTo("Too many tasks");
    }

    private int statusOf(ErrorKind code) {
        ResponseEntity<ProblemDetail> r = handler.cluster(new ButterflyException(ErrorCode.INTERNAL_ERROR, code, "stage said no"));
        assertThat(r.getHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON);
        assertThat(r.getBody().getProperties()).containsEntry("error_code", "INTERNAL_ERROR");
        return r.getStatusCode().value();
    }
}
