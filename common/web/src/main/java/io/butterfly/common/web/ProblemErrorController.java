package io.butterfly.common.web;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.http.HttpServletRequest;
import java.net.URI;
import java.net.URISyntaxException;
import org.springframework.boot.webmvc.error.ErrorController;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * The error path ({@code /error}) of every Butterfly service, in place of Boot's BasicErrorController: an error that
 * no exception handler answered (a route no controller maps where no handler advice applies, a method the server
 * refuses such as TRACE, a {@code sendError} from a filter) is answered in problem+json like every other REST error,
 * not as Boot's {@code {"timestamp", "error", "path"}} map. Installed by {@link ProblemErrorReportAutoConfiguration}.
 */
@RestController
public class ProblemErrorController implements ErrorController {

    @RequestMapping("${server.error.path:${error.path:/error}}")
    public ResponseEntity<ProblemDetail> error(HttpServletRequest request) {
        int status = request.getAttribute(RequestDispatcher.ERROR_STATUS_CODE) instanceof Integer code && code >= 400
                ? code : 500;
        ProblemDetail problem = ProblemDetail.forStatus(status);
        problem.setTitle(ProblemErrorReportValve.title(status));
        Object path = request.getAttribute(RequestDispatcher.ERROR_REQUEST_URI);
        problem.setDetail(detail(status, path instanceof String p ? p : ""));
        problem.setInstance(instance(path)); // the failed request's path rather than the error path
        return ResponseEntity.status(status).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(problem);
    }

    /** What went wrong, naming the request's path (as sent, %-escapes and all; Tomcat accepted it). */
    static String detail(int status, String path) {
        if (status >= 500) {
            return "The server could not process the request"; // never an exception's message
        }
        return switch (status) {
            case 404 -> "No endpoint answers " + path;
            case 405 -> "The method is not allowed on " + path;
            default -> "The request to " + path + " was refused";
        };
    }

    /** The path as a URI reference, already %-escaped as sent; null (Spring then names the error path) if it is not one. */
    private static URI instance(Object path) {
        try {
            return path instanceof String p ? new URI(p) : null;
        } catch (URISyntaxException e) {
            return null;
        }
    }
}
