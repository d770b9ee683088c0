package io.butterfly.common.web.limits;

import java.io.IOException;

/** A request body that went past {@code butterfly.http.max-request-body} while it was read (a chunked body). */
public final class RequestBodyTooLargeException extends IOException {

    private final long limit;

    public RequestBodyTooLargeException(long limit) {
        super("the request body is over the limit of " + limit + " bytes");
        this.limit = limit;
    }

    public long limit() {
        return limit;
    }
}
