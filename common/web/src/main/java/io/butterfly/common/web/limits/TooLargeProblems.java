package io.butterfly.common.web.limits;

import io.butterfly.common.json.JsonFieldPath;
import java.util.Optional;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import tools.jackson.core.exc.StreamConstraintsException;

/**
 * The 413 problem of a body over a limit, found among the causes of a body that could not be read: a chunked body
 * past {@code butterfly.http.max-request-body}, or JSON past one of the parser's limits ({@code max-json-*}), naming
 * the field the parser was in. Each service's handler of unreadable bodies asks it first.
 */
public final class TooLargeProblems {

    public static final String TITLE = "Request too large";

    private TooLargeProblems() {
    }

    public static Optional<ProblemDetail> of(Throwable unreadable) {
        for (Throwable c = unreadable; c != null; c = c.getCause()) {
            if (c instanceof RequestBodyTooLargeException body) {
                return Optional.of(bodyTooLarge(body.limit(), -1));
            }
            if (c instanceof StreamConstraintsException json) {
                return Optional.of(jsonTooLarge(json, JsonFieldPath.of(unreadable)));
            }
        }
        return Optional.empty();
    }

    /** A body over {@code limit} bytes; {@code declared} its declared length, or -1 when it was counted as read. */
    public static ProblemDetail bodyTooLarge(long limit, long declared) {
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.CONTENT_TOO_LARGE, (declared < 0
                ? "the request body is over the limit of " : "the request body is " + declared + " bytes, over the limit of ")
                + limit + " bytes (butterfly.http.max-request-body)");
        p.setTitle(TITLE);
        p.setProperty("field", "body");
        return p;
    }

    private static ProblemDetail jsonTooLarge(StreamConstraintsException e, String path) {
        String message = String.valueOf(e.getOriginalMessage());
        String setting = message.contains("getMaxStringLength") ? "max-json-string-chars"
                : message.contains("getMaxNestingDepth") ? "max-json-depth"
                : message.contains("getMaxTokenCount") ? "max-json-tokens"
                : message.contains("getMaxDocumentLength") ? "max-request-body" : null;
        // An array cut short by the token count is named, not the index it had reached.
        String field = path == null ? "body" : "max-json-tokens".equals(setting) ? path.replaceFirst("\\[\\d+]$", "") : path;
        String what = switch (setting == null ? "" : setting) {
            case "max-json-string-chars" -> "a string longer than";
            case "max-json-depth" -> "JSON nested deeper than";
            case "max-json-tokens" -> "more JSON values than";
            default -> "a value over";
        };
        int from = message.indexOf("exceeds the maximum allowed (");
        String limit = from < 0 ? "" : message.substring(from + "exceeds the maximum allowed (".length()).replaceFirst("[,)].*$", "");
        ProblemDetail p = ProblemDetail.forStatusAndDetail(HttpStatus.CONTENT_TOO_LARGE,
                ("body".equals(field) ? "the request body has " : "field '" + field + "' has ") + what + " the limit"
                        + (limit.isEmpty() ? "" : " of " + limit)
                        + (setting == null ? "" : " (butterfly.http." + setting + ")"));
        p.setTitle(TITLE);
        p.setProperty("field", field);
        return p;
    }
}
