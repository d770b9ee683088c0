package io.butterfly.registry.api.rest;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.json.JsonFieldPath;
import io.butterfly.registry.catalog.ImportRoots;
import io.butterfly.registry.catalog.ModelIdTakenException;
import io.butterfly.common.web.limits.TooLargeProblems;
import java.net.URI;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

/** RFC 9457 problem responses for the registry's REST API (docs/errors.md); never a stack trace. */
@RestControllerAdvice(assignableTypes = ModelsController.class)
public class ProblemHandler extends ResponseEntityExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ProblemHandler.class);

    @ExceptionHandler(ButterflyException.class)
    ResponseEntity<ProblemDetail> butterfly(ButterflyException e) {
        HttpStatus status = switch (e.code()) {
            case MANIFEST_NOT_FOUND, WEIGHT_FILE_NOT_FOUND -> HttpStatus.NOT_FOUND;
            case INVALID_MANIFEST, INVALID_MESSAGE -> HttpStatus.BAD_REQUEST;
            default -> HttpStatus.INTERNAL_SERVER_ERROR;
        };
        ProblemDetail p = ProblemDetail.forStatusAndDetail(status, e.getMessage());
        p.setTitle(status.getReasonPhrase());
        p.setProperty("code", e.code().name());
        String field = e.context().get("field");
        if (field != null) {
            p.setProperty("field", field);
        }
        return problem(p);
    }

    @ExceptionHandler(ModelsController.BadRequestException.class)
    ResponseEntity<ProblemDetail> badRequest(ModelsController.BadRequestException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST, e.getMessage());
        p.setTitle("Bad Request");
        p.setProperty("code", "INVALID_MESSAGE");
        p.setProperty("field", e.field);
        return problem(p);
    }

    /** An import path outside the import roots: the same answer whatever is there. */
    @ExceptionHandler(ImportRoots.Refused.class)
    ResponseEntity<ProblemDetail> outsideRoots(ImportRoots.Refused e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.FORBIDDEN, e.getMessage());
        p.setTitle("Forbidden");
        p.setProperty("code", "INVALID_MESSAGE");
        p.setProperty("field", "path");
        return problem(p);
    }

    /** A model id already imported from other weights: nothing changed. */
    @ExceptionHandler(ModelIdTakenException.class)
    ResponseEntity<ProblemDetail> idTaken(ModelIdTakenException e) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, e.getMessage());
        p.setTitle("Conflict");
        p.setProperty("code", "MODEL_ID_TAKEN");
        p.setProperty("field", e.field());
        p.setProperty("model_id", e.modelId());
        return problem(p);
    }

    @ExceptionHandler(java.io.IOException.class)
    ResponseEntity<ProblemDetail> io(java.io.IOException e) {
        log.error("import failed", e);
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.INTERNAL_SERVER_ERROR,
                "the registry could not read or write model files: " + e.getClass().getSimpleName());
        p.setTitle("Internal Server Error");
        p.setProperty("code", "INTERNAL_ERROR");
        return problem(p);
    }

    /** Malformed JSON or a value of the wrong type: name the field when Jackson knows it. */
    @Override
    protected ResponseEntity<Object> handleHttpMessageNotReadable(HttpMessageNotReadableException ex, HttpHeaders headers,
                                                                  HttpStatusCode status, WebRequest request) {
        ProblemDetail tooLarge = TooLargeProblems.of(ex).orElse(null);
        if (tooLarge != null) {
            tooLarge.setProperty("code", "INVALID_MESSAGE");
            return ResponseEntity.status(HttpStatus.CONTENT_TOO_LARGE).contentType(MediaType.APPLICATION_PROBLEM_JSON)
                    .body(tooLarge);
        }
        String field = JsonFieldPath.of(ex);
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.BAD_REQUEST,
                field == null ? JsonFieldPath.bodyProblem(ex) : "field '" + field + "' has an invalid value");
        p.setTitle("Bad Request");
        p.setProperty("code", "INVALID_MESSAGE");
        p.setProperty("field", field == null ? "body" : field);
        return ResponseEntity.status(HttpStatus.BAD_REQUEST).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
    }

    /** Anything else is a defect here: logged with its trace, answered without one. */
    @ExceptionHandler(Exception.class)
    ResponseEntity<ProblemDetail> unexpected(Exception e) {
        log.error("request failed", e);
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.INTERNAL_SERVER_ERROR,
                "internal error: " + e.getClass().getSimpleName());
        p.setTitle("Internal Server Error");
        p.setProperty("code", "INTERNAL_ERROR");
        return problem(p);
    }

    private static ResponseEntity<ProblemDetail> problem(ProblemDetail p) {
        p.setType(URI.create("about:blank"));
        return ResponseEntity.status(p.getStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
    }
}
