package io.butterfly.common.web.audit;

import io.butterfly.common.web.auth.ApiKeyPrincipal;
import io.butterfly.common.web.auth.ApiKeySecurity;
import jakarta.servlet.http.HttpServletRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * Who did what to the cluster: structured lines (SLF4J key-values: fields of the ECS JSON line on Kubernetes, and
 * {@code [key=value ...]} in plain text) of their own logger, {@value #LOGGER}, so that they can be kept, shipped or
 * alerted on apart from the rest. Written: every request made with an admin key (INFO) and with a user key (DEBUG),
 * every key refused (WARN), and each admin action (drain, import) with its outcome. A key appears by its id (the first
 * 8 bytes of its SHA-256), never itself.
 */
public final class AuditLog {

    public static final String LOGGER = "butterfly.audit";
    private static final Logger log = LoggerFactory.getLogger(LOGGER);

    private AuditLog() {
    }

    /** A request authenticated with {@code key}. */
    public static void keyUsed(HttpServletRequest request, ApiKeyPrincipal key) {
        request(key.admin() ? Level.INFO : Level.DEBUG, "api key used", request)
                .addKeyValue("key_id", key.keyId()).addKeyValue("role", key.role().name().toLowerCase()).log();
    }

    /** A request refused for its key: none, not one of the keys, or not an admin key where one is needed. */
    public static void keyRefused(HttpServletRequest request, int status, String why) {
        ApiKeyPrincipal key = ApiKeySecurity.currentKey();
        LoggingEventBuilder line = request(Level.WARN, "api key refused", request).addKeyValue("status", status)
                .addKeyValue("reason", why);
        if (key != null) {
            line = line.addKeyValue("key_id", key.keyId()).addKeyValue("role", key.role().name().toLowerCase());
        }
        line.log();
    }

    /**
     * An admin action on {@code target} and its {@code outcome} ({@code accepted}, {@code refused}, ...), by the key
     * of the request this thread serves (none when keys are off).
     */
    public static void action(String action, String target, String outcome, String detail) {
        ApiKeyPrincipal key = ApiKeySecurity.currentKey();
        LoggingEventBuilder line = log.atLevel(Level.INFO).setMessage("admin action " + action + " " + outcome)
                .addKeyValue("event", "admin_action").addKeyValue("action", action).addKeyValue("target", target)
                .addKeyValue("outcome", outcome).addKeyValue("key_id", key == null ? "none" : key.keyId());
        if (detail != null) {
            line = line.addKeyValue("detail", detail);
        }
        line.log();
    }

    private static LoggingEventBuilder request(Level level, String message, HttpServletRequest request) {
        return log.atLevel(level).setMessage(message).addKeyValue("event", message.replace(' ', '_'))
                .addKeyValue("method", request.getMethod()).addKeyValue("path", request.getRequestURI())
                .addKeyValue("remote", request.getRemoteAddr());
    }
}
