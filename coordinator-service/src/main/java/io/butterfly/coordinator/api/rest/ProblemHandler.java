package io.butterfly.coordinator.api.rest;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.json.JsonFieldPath;
import io.butterfly.common.web.ProblemDocuments;
import io.butterfly.common.web.limits.TooLargeProblems;
import io.butterfly.coordinator.cluster.NotReadyException;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.NotServingException;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.inference.engine.QueueFullException;
import io.butterfly.coordinator.inference.UnknownModelException;
import io.butterfly.coordinator.inference.UnknownTaskException;
import io.butterfly.coordinator.model.ChatTemplateException;
import io.butterfly.coordinator.reconcile.DrainRefusedException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NoSuchElementException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/** RFC 9457 problem details for every REST error (docs/errors.md); the field is named, no stack traces. */
@RestControllerAdvice
public class ProblemHandler extends ResponseEntityExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ProblemHandler.class);

    @ExceptionHandler(InvalidRequestException.class)
    ProblemDetail invalid(InvalidRequestException e) {
        HttpStatus status = e.tooLarge() ? HttpStatus.CONTENT_TOO_LARGE : HttpStatus.BAD_REQUEST;
        ProblemDetail p = ProblemDetail.forStatusAndDetail(status, e.getMessage());
        p.setTitle(e.tooLarge() ? "Request too large" : "Invalid request");
        p.setProperty("field", e.field());
        return p;
    }

    @ExceptionHandler({NotServingException.class, NotReadyException.class})
    ProblemDetail notReady(RuntimeException e) {
        return notReadyProblem(e);
    }

    private static ProblemDetail notReadyProblem(RuntimeException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, e.getMessage());
        p.setTitle("Cluster not ready");
        return p;
    }

    /** The control log has no reachable leader or quorum (e.g. during a coordinator election): retry later. */
    @ExceptionHandler(ControlLogUnavailableException.class)
    ProblemDetail controlLogUnavailable(ControlLogUnavailableException e) {
        return controlLogProblem(e);
    }

    private static ProblemDetail controlLogProblem(ControlLogUnavailableException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.SERVICE_UNAVAILABLE, e.getMessage());
        p.setTitle("Control log unavailable");
        return p;
    }

    /**
     * The problem a generation that already streamed tokens failed with (the status line was sent long before, so
     * it goes out as a stream's last event): a failure in the cluster or the control log as above, anything else
     * a defect here.
     */
    public static ProblemDetail afterStreamStarted(RuntimeException e) {
        if (e instanceof ButterflyException b) {
            return clusterProblem(b).getBody();
        }
        if (e instanceof ControlLogUnavailableException c) {
            return controlLogProblem(c);
        }
        if (e instanceof NotServingException || e instanceof NotReadyException) {
            return notReadyProblem(e);
        }
        return internalError(e);
    }

    /** The problem's standard members and its properties ({@code error_code}, {@code field}) at the top level, as sent. */
    public static Map<String, Object> flatten(ProblemDetail p) {
        return ProblemDocuments.flatten(p);
    }

    /**
     * No room for the request now: this replica's queue is full, or its API key holds its share of it or spent its
     * tokens per minute; retry after the seconds said (RFC 9110 Retry-After).
     */
    @ExceptionHandler(QueueFullException.class)
    ResponseEntity<ProblemDetail> tooManyTasks(QueueFullException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.TOO_MANY_REQUESTS, e.getMessage());
        p.setTitle("Too many tasks");
        return ResponseEntity.status(HttpStatus.TOO_MANY_REQUESTS)
                .header(HttpHeaders.RETRY_AFTER, Long.toString(e.retryAfterSeconds()))
                .contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
    }

    @ExceptionHandler(UnknownModelException.class)
    ProblemDetail unknownModel(UnknownModelException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, e.getMessage());
        p.setTitle("Model not found");
        p.setProperty("field", e.field());
        p.setProperty("error_code", ErrorCode.MANIFEST_NOT_FOUND.name());
        return p;
    }

    /**
     * The served model's chat template failed on a conversation (a refusal by the template is a 400, raised as an
     * {@link InvalidRequestException}): the model's fault, not the client's, and said so.
     */
    @ExceptionHandler(ChatTemplateException.class)
    ProblemDetail chatTemplateFailed(ChatTemplateException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.INTERNAL_SERVER_ERROR, e.getMessage());
        p.setTitle("Chat template failed");
        return p;
    }

    /** A drain the cluster cannot absorb (or not now): nothing was done; where capacity is why, need and capacity. */
    @ExceptionHandler(DrainRefusedException.class)
    ProblemDetail drainRefused(DrainRefusedException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, e.getMessage());
        p.setTitle("Drain refused");
        if (e.capacity() != null) {
            p.setProperty("error_code", "InsufficientResources");
            p.setProperty("required_bytes", e.capacity().requiredBytes());
            p.setProperty("available_bytes", e.capacity().availableBytes());
        }
        return p;
    }

    @ExceptionHandler(NoSuchElementException.class)
    ProblemDetail notFound(NoSuchElementException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND, e.getMessage());
        p.setTitle("Not found");
        if (e instanceof UnknownTaskException task && task.field() != null) {
            p.setProperty("field", task.field());
        }
        return p;
    }

    /**
     * A failure inside the cluster (a worker unreachable, a stage refusing a step). The request itself was
     * validated before it reached a stage, so a stage's refusal is not the client's fault: 503 where the
     * cluster is between states (retry), 502 where a stage failed the step.
     */
    @ExceptionHandler(ButterflyException.class)
    ResponseEntity<ProblemDetail> cluster(ButterflyException e) {
        return clusterProblem(e);
    }

    private static ResponseEntity<ProblemDetail> clusterProblem(ButterflyException e) {
        HttpStatus status = switch (e.kind()) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, FAILED_PRECONDITION, NOT_FOUND, CANCELLED ->
                    HttpStatus.SERVICE_UNAVAILABLE;
            // a stage's KV cache budget is spent until other sequences finish
            case RESOURCE_EXHAUSTED -> HttpStatus.TOO_MANY_REQUESTS;
            // a sequence that needs more KV cache than a stage's whole budget: fewer tokens, not a retry
            case OUT_OF_RANGE -> HttpStatus.CONTENT_TOO_LARGE;
            default -> HttpStatus.BAD_GATEWAY;
        };
        ProblemDetail p = ProblemDetail.forStatusAndDetail(status, e.getMessage());
        p.setTitle(status == HttpStatus.CONTENT_TOO_LARGE ? "Request too large" : "Cluster error");
        p.setProperty("error_code", e.code().name());
        if (RequestHandle.goesOnElsewhere(e)) {
            p.setProperty("resumable", true); // the generation goes on: Last-Event-ID or Idempotency-Key gets the rest
        }
        if (status == HttpStatus.CONTENT_TOO_LARGE) {
            p.setProperty("field", "max_tokens");
        }
        ResponseEntity.BodyBuilder response = ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON);
        // Soon retried: the cluster between states or memory freed by other tasks; not after a step that timed out.
        boolean soon = switch (e.kind()) {
            case UNAVAILABLE, ABORTED, FAILED_PRECONDITION, NOT_FOUND, RESOURCE_EXHAUSTED -> true;
            default -> false;
        };
        if (soon) {
            response.header(HttpHeaders.RETRY_AFTER, "1");
        }
        return response.body(p);
    }

    /** Anything else is a defect here: logged with its trace, answered without one. */
    @ExceptionHandler(Exception.class)
    ResponseEntity<ProblemDetail> unexpected(Exception e) {
        return ResponseEntity.internalServerError().contentType(MediaType.APPLICATION_PROBLEM_JSON).body(internalError(e));
    }

    private static ProblemDetail internalError(Exception e) {
        log.error("request failed", e);
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.INTERNAL_SERVER_ERROR,
                "internal error: " + e.getClass().getSimpleName());
        p.setTitle("Internal error");
        return p;
    }

    /**
     * Malformed JSON or a value of the wrong type: name the field when Jackson knows it. A body over a size limit
     * (butterfly.http.*), found as it was read, is 413 naming the field the reader was in.
     */
    @Override
    protected ResponseEntity<Object> handleHttpMessageNotReadable(HttpMessageNotReadableException ex, HttpHeaders headers,
                                                                  HttpStatusCode status, WebRequest request) {
        ProblemDetail tooLarge = TooLargeProblems.of(ex).orElse(null);
        if (tooLarge != null) {
            return ResponseEntity.status(HttpStatus.CONTENT_TOO_LARGE).contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .body(tooLarge);
        }
        String field = JsonFieldPath.of(ex);
        String detail = field == null ? JsonFieldPath.bodyProblem(ex)
                : ex.getMostSpecificCause() instanceof tools.jackson.databind.exc.UnrecognizedPropertyException
                ? "unknown field '" + field + "'"
                : "field '" + field + "' has an invalid value (wrong JSON type or out of range)";
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, detail);
        p.setTitle("Malformed request");
        p.setProperty("field", field == null ? "body" : field);
        return ResponseEntity.badRequest().contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
    }

}
