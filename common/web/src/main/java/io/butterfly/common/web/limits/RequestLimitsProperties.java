package io.butterfly.common.web.limits;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * What one HTTP request may bring, in every service (docs/security.md#limits), checked before anything is read whole:
 * the body by the servlet filter and Tomcat, its JSON by the parser as it reads.
 *
 * @param maxRequestBody     a request body's bytes: a larger declared length is refused before a byte is read, a
 *                           chunked body once it passes the limit; also Tomcat's form-post and swallow sizes. The
 *                           default holds a prompt of 131 072 token ids or a 65 536-character prompt escaped six times
 * @param maxJsonDepth       how deeply JSON may nest (the deepest body Butterfly reads nests 4 levels)
 * @param maxJsonStringChars the longest JSON string (a prompt, a message's content), in characters
 * @param maxJsonTokens      JSON values, names and brackets in one body, which bounds every array's elements (a
 *                           {@code token_ids} of 131 072 ids, or a chat of many messages, fits)
 */
@ConfigurationProperties("butterfly.http")
public record RequestLimitsProperties(@DefaultValue("2MB") DataSize maxRequestBody,
                                      @DefaultValue("32") int maxJsonDepth,
                                      @DefaultValue("1048576") int maxJsonStringChars,
                                      @DefaultValue("200000") long maxJsonTokens) {

    public RequestLimitsProperties {
        if (maxRequestBody.toBytes() < 1024 || maxJsonDepth < 4 || maxJsonStringChars < 1024 || maxJsonTokens < 1024) {
            throw new IllegalArgumentException("butterfly.http limits too small to read any request: max-request-body "
                    + maxRequestBody + ", max-json-depth " + maxJsonDepth + ", max-json-string-chars "
                    + maxJsonStringChars + ", max-json-tokens " + maxJsonTokens);
        }
    }
}
