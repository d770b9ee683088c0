package io.butterfly.common.web;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * A path no endpoint maps gets the same 404 from every service ("No endpoint answers /x"), as
 * {@link ProblemErrorController} words it, instead of Spring's "No static resource x." where the static
 * resource handler was asked first. Ahead of each service's own handler advice, which would word it so.
 */
@RestControllerAdvice
@Order(Ordered.HIGHEST_PRECEDENCE)
public class UnknownRouteAdvice {

    @ExceptionHandler({NoResourceFoundException.class, NoHandlerFoundException.class})
    ResponseEntity<ProblemDetail> unknownRoute(HttpServletRequest request) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.NOT_FOUND,
                ProblemErrorController.detail(404, request.getRequestURI()));
        p.setTitle(ProblemErrorReportValve.title(404));
        return ResponseEntity.status(HttpStatus.NOT_FOUND).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
    }
}
