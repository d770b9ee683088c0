package io.butterfly.common.web;

import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.ProblemDetail;

/** Problem documents (RFC 9457) written where no message converter writes them: a stream's event, a filter. */
public final class ProblemDocuments {

    private ProblemDocuments() {
    }

    /** A problem's members, its extension properties at the top level as RFC 9457 has them. */
    public static Map<String, Object> flatten(ProblemDetail p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", p.getType() == null ? "about:blank" : p.getType().toString()); // RFC 9457's default
        m.put("title", p.getTitle());
        m.put("status", p.getStatus());
        m.put("detail", p.getDetail());
        if (p.getProperties() != null) {
            m.putAll(p.getProperties());
        }
        return m;
    }
}
