package io.butterfly.common.web.csrf;

import io.butterfly.common.web.ProblemDecoration;
import io.butterfly.common.web.ProblemDocuments;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.filter.OncePerRequestFilter;
import tools.jackson.databind.json.JsonMapper;

/**
 * Refuses a state-changing request (any method but GET, HEAD, OPTIONS and TRACE) that a page of another site could
 * have made a browser send: Butterfly's APIs use no cookies, but a cluster on a trusted network or loopback answers
 * whoever reaches it, and a browser on that network reaches it for any page it shows (a cross-site form POST drained
 * a worker). Refused:
 * <ul>
 *   <li>415, a body of a type an HTML form or a "simple" cross-origin request can send without asking
 *       ({@code application/x-www-form-urlencoded}, {@code multipart/form-data}, {@code text/plain}): the APIs take
 *       JSON or no body;</li>
 *   <li>403, an {@code Origin} that is not the server's own (its {@code Host}) nor one of
 *       {@code butterfly.http.allowed-origins}; a browser sends it with every cross-origin POST, a body or not;</li>
 *   <li>403, {@code Sec-Fetch-Site: cross-site} without such an origin.</li>
 * </ul>
 * Clients that are not browsers (curl, the CLI, OpenAI's libraries) send JSON or no body and no {@code Origin}, and
 * pass; so does the dashboard, from its own origin.
 */
public final class CrossSiteRequestFilter extends OncePerRequestFilter {

    private static final Set<String> SAFE_METHODS = Set.of("GET", "HEAD", "OPTIONS", "TRACE");
    private static final Set<String> FORM_TYPES = Set.of("application/x-www-form-urlencoded", "multipart/form-data",
            "text/plain");
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final Set<String> allowedOrigins;
    private final ProblemDecoration decoration;

    /** @param allowedOrigins origins besides the server's own ({@code https://console.example.com}), as browsers send them */
    public CrossSiteRequestFilter(Set<String> allowedOrigins, ProblemDecoration decoration) {
        this.allowedOrigins = allowedOrigins.stream().map(o -> o.toLowerCase(Locale.ROOT)).collect(
                java.util.stream.Collectors.toUnmodifiableSet());
        this.decoration = decoration;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        if (SAFE_METHODS.contains(request.getMethod())) {
            chain.doFilter(request, response);
            return;
        }
        String formType = formType(request);
        String why = formType != null ? "a " + request.getMethod() + " with a body of type " + formType + " is what"
                + " another site's page can make a browser send: send JSON (Content-Type: application/json) or no body"
                : crossOrigin(request);
        if (why == null) {
            chain.doFilter(request, response);
            return;
        }
        HttpStatus status = formType != null ? HttpStatus.UNSUPPORTED_MEDIA_TYPE : HttpStatus.FORBIDDEN;
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(status, why);
        problem.setTitle("Cross-site request refused");
        if (formType != null) {
            problem.setProperty("field", "Content-Type");
        }
        decoration.decorate(request, problem);
        Map<String, Object> body = ProblemDocuments.flatten(problem);
        body.put("instance", request.getRequestURI());
        response.setStatus(status.value());
        response.setContentType(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JSON.writeValue(response.getOutputStream(), body);
    }

    /** The body's media type when a form or a simple cross-origin request can send it; null otherwise. */
    private static String formType(HttpServletRequest request) {
        String type = request.getContentType();
        if (type == null) {
            return null;
        }
        String media = type.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
        return FORM_TYPES.contains(media) ? media : null;
    }

    /** Why the request comes from another origin's page; null when it does not. */
    private String crossOrigin(HttpServletRequest request) {
        String origin = request.getHeader("Origin");
        if (origin != null && !origin.equals("null") && (sameOrigin(origin, request)
                || allowedOrigins.contains(origin.toLowerCase(Locale.ROOT)))) {
            return null;
        }
        if (origin != null) {
            return "a " + request.getMethod() + " from the page of another origin (" + origin + ") is refused: add it to"
                    + " butterfly.http.allowed-origins if it is yours";
        }
        if ("cross-site".equalsIgnoreCase(request.getHeader("Sec-Fetch-Site"))) {
            return "a " + request.getMethod() + " a browser sent for another site's page is refused";
        }
        return null;
    }

    /** Whether {@code origin} names the host and port the request was sent to (its scheme aside: a proxy may end TLS). */
    private static boolean sameOrigin(String origin, HttpServletRequest request) {
        String host = request.getHeader("Host");
        try {
            URI uri = URI.create(origin);
            if (host == null || uri.getHost() == null) {
                return false;
            }
            String authority = uri.getPort() < 0 ? uri.getHost() : uri.getHost() + ":" + uri.getPort();
            return authority.equalsIgnoreCase(host) || (uri.getPort() < 0 && host.equalsIgnoreCase(uri.getHost()
                    + (("https".equals(uri.getScheme())) ? ":443" : ":80")));
        } catch (IllegalArgumentException e) {
            return false;
        }
    }
}
