package io.butterfly.coordinator.api.openai;

import io.butterfly.common.web.ProblemDecoration;
import io.butterfly.coordinator.api.rest.ProblemHandler;
import jakarta.servlet.http.HttpServletRequest;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.core.MethodParameter;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.server.ServerHttpRequest;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.http.server.ServletServerHttpRequest;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.servlet.mvc.method.annotation.ResponseBodyAdvice;
import org.springframework.web.util.UrlPathHelper;

/**
 * Problems answered under {@code /v1/} stay RFC 9457 documents (docs/errors.md) and also carry OpenAI's {@code error}
 * object ({@code message}, {@code type}, {@code param}, {@code code}), which OpenAI's client libraries read to raise
 * their errors.
 */
@RestControllerAdvice
public class OpenAiErrors implements ResponseBodyAdvice<Object>, ProblemDecoration {

    static final String PATH_PREFIX = "/v1/";
    private static final UrlPathHelper PATHS = UrlPathHelper.defaultInstance;

    @Override
    public boolean supports(MethodParameter returnType, Class<? extends HttpMessageConverter<?>> converterType) {
        return true;
    }

    @Override
    public Object beforeBodyWrite(Object body, MethodParameter returnType, MediaType contentType,
                                  Class<? extends HttpMessageConverter<?>> converterType, ServerHttpRequest request,
                                  ServerHttpResponse response) {
        if (body instanceof ProblemDetail p && request instanceof ServletServerHttpRequest servlet) {
            addTo(servlet.getServletRequest(), p);
        }
        return body;
    }

    /** The same for problems a filter writes (a body over the size limit). */
    @Override
    public void decorate(HttpServletRequest request, ProblemDetail problem) {
        addTo(request, problem);
    }

    /** Adds OpenAI's {@code error} object to a problem answered under {@code /v1/}. */
    public static void addTo(HttpServletRequest request, ProblemDetail p) {
        if (PATHS.getPathWithinApplication(request).startsWith(PATH_PREFIX)) {
            p.setProperty("error", error(p));
        }
    }

    /** A problem as a stream's last event under {@code /v1/}: the problem's members with {@code error} among them. */
    static Map<String, Object> body(ProblemDetail p) {
        Map<String, Object> m = ProblemHandler.flatten(p);
        m.put("error", error(p));
        return m;
    }

    static Map<String, Object> error(ProblemDetail p) {
        Map<String, Object> props = p.getProperties() == null ? Map.of() : p.getProperties();
        Object field = props.get("field");
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("message", p.getDetail());
        e.put("type", type(p.getStatus()));
        e.put("param", field);
        e.put("code", code(p.getStatus(), field, props.get("error_code")));
        return e;
    }

    /**
     * OpenAI's codes where its clients look for them (LangChain and LiteLLM tell a context window that is too small
     * by {@code context_length_exceeded}); otherwise the problem's {@code error_code}.
     */
    private static Object code(int status, Object field, Object errorCode) {
        if (status == HttpStatus.UNAUTHORIZED.value()) {
            return "invalid_api_key";
        }
        if (status == HttpStatus.NOT_FOUND.value() && "model".equals(field)) {
            return "model_not_found";
        }
        if (status == HttpStatus.CONTENT_TOO_LARGE.value()) {
            return "context_length_exceeded";
        }
        return errorCode;
    }

    /** OpenAI's error types by status: the client's request, the rate of requests, or the server. */
    private static String type(int status) {
        if (status == HttpStatus.TOO_MANY_REQUESTS.value()) {
            return "rate_limit_error";
        }
        return status < 500 ? "invalid_request_error" : "server_error";
    }
}
