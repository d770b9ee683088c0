package io.butterfly.common.web.limits;

import io.butterfly.common.web.ProblemDecoration;
import io.butterfly.common.web.ProblemDocuments;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.filter.OncePerRequestFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * Refuses a request body over {@code butterfly.http.max-request-body} before it is read: 413 at once for a declared
 * length over the limit (not a byte of the body read), and for a body without one (chunked) a read that fails once
 * the limit is passed, which the service's handler answers 413 ({@link TooLargeProblems}). Before every other filter,
 * API keys included: nothing reads a body larger than this.
 */
public final class RequestBodyLimitFilter extends OncePerRequestFilter {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final long maxBytes;
    private final ProblemDecoration decoration;

    public RequestBodyLimitFilter(long maxBytes, ProblemDecoration decoration) {
        this.maxBytes = maxBytes;
        this.decoration = decoration;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        long declared = request.getContentLengthLong();
        if (declared > maxBytes) {
            ProblemDetail problem = TooLargeProblems.bodyTooLarge(maxBytes, declared);
            decoration.decorate(request, problem);
            Map<String, Object> body = ProblemDocuments.flatten(problem);
            body.put("instance", request.getRequestURI());
            response.setStatus(problem.getStatus());
            response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
            // The client may still be sending: say the connection ends rather than read what was refused.
            response.setHeader("Connection", "close");
            JSON.writeValue(response.getOutputStream(), body);
            return;
        }
        chain.doFilter(new LimitedBodyRequest(request, maxBytes), response);
    }
}
