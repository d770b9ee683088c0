package io.butterfly.common.web;

import java.io.IOException;
import java.io.Writer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ErrorReportValve;
import org.apache.coyote.ActionCode;
import org.springframework.http.HttpStatus;
import tools.jackson.core.json.JsonWriteFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The Host's error report of every Butterfly service (installed by {@link ProblemErrorReportAutoConfiguration}).
 * A request Tomcat rejects before Spring sees it (an undecodable, encoded-slash or over-long URL, a broken request
 * line or header) would otherwise get Tomcat's HTML page; it gets {@code application/problem+json} like every other
 * REST error. The raw URI is never echoed (it may be kilobytes of garbage or hold a NUL), nor an exception's message.
 */
public class ProblemErrorReportValve extends ErrorReportValve {

    static final String PROBLEM_JSON = "application/problem+json";

    /** Escaping non-ASCII keeps the body ASCII, so the reporter's default charset cannot garble it. */
    private static final JsonMapper JSON = JsonMapper.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build();

    private static final int MAX_MESSAGE = 120;

    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        // As the HTML valve: only an error with nothing written yet, reported once, while the connection can take it
        if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) {
            return;
        }
        AtomicBoolean ioAllowed = new AtomicBoolean();
        response.getCoyoteResponse().action(ActionCode.IS_IO_ALLOWED, ioAllowed);
        if (!ioAllowed.get()) {
            return;
        }
        try {
            Writer writer = response.getReporter();
            if (writer != null) {
                response.setContentType(PROBLEM_JSON);
                writer.write(problem(status, response.getMessage(), status == 400 && rejectedTarget(response)));
                response.finishResponse();
            }
        } catch (IOException | IllegalStateException e) {
            // the client is gone or the response was committed meanwhile: nothing left to tell it
        }
    }

    /**
     * Whether Tomcat refused the request target: its URI checks once the request was parsed (undecodable, encoded
     * slash, NUL, not normalized; the processor is not in error then), or its parser stopping after the method and
     * before the protocol (illegal character, over-long target). A bad method, header or Host is not the path's fault.
     */
    private static boolean rejectedTarget(Response response) {
        AtomicBoolean parseFailed = new AtomicBoolean();
        response.getCoyoteResponse().action(ActionCode.IS_ERROR, parseFailed);
        org.apache.coyote.Request request = response.getCoyoteResponse().getRequest();
        return !parseFailed.get()
                || !request.method().isNull() && (request.requestURI().isNull() || request.protocol().isNull());
    }

    /** The problem document for a status and Tomcat's message for it (dropped unless {@link #safe}). */
    static String problem(int status, String tomcatMessage, boolean pathRejected) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", "about:blank");
        body.put("title", title(status));
        body.put("status", status);
        if (status < 500) {
            String detail = pathRejected
                    ? "The server rejected the request line or URL before it reached the application"
                    : "The server rejected the request before it reached the application";
            body.put("detail", safe(tomcatMessage) ? detail + ": " + tomcatMessage : detail);
        } else {
            body.put("detail", "The server could not process the request");
        }
        if (pathRejected) {
            body.put("field", "path");
        }
        return JSON.writeValueAsString(body);
    }

    /** The status's reason phrase, or the class of error for a status HTTP does not name. */
    static String title(int status) {
        HttpStatus known = HttpStatus.resolve(status);
        return known != null ? known.getReasonPhrase() : status < 500 ? "Client Error" : "Server Error";
    }

    /**
     * Tomcat's own messages ("Invalid URI: [The hexadecimal encoding is invalid]") are short printable ASCII; one
     * that is long, holds control characters or a slash, percent or backslash may quote the request, so it is dropped.
     */
    static boolean safe(String message) {
        if (message == null || message.isBlank() || message.length() > MAX_MESSAGE) {
            return false;
        }
        return message.chars().allMatch(c -> c >= 0x20 && c < 0x7f && c != '/' && c != '%' && c != '\\');
    }
}
