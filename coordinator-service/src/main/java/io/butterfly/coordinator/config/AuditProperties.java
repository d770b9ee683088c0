package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.audit.StepAuditor;
import java.security.SecureRandom;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Audits of computed steps (docs/verified-execution.md#audits).
 *
 * @param fraction       of each sequence's steps recomputed by an audit pipeline of spares, 0 (off) to 1 (every step)
 * @param beforeSampling an audited step's tokens are sampled only once its audit agreed (with fraction 1: no token of
 *                       an unverified step reaches a client); otherwise audits run beside the stream
 * @param key            what the choice of audited steps is keyed with: the same on every coordinator replica so they
 *                       choose the same steps, never told to workers; 0: a random key of this process
 */
@ConfigurationProperties("butterfly.coordinator.audit")
public record AuditProperties(
        @DefaultValue("0") double fraction,
        @DefaultValue("false") boolean beforeSampling,
        @DefaultValue("0") long key) {

    public AuditProperties {
        if (!(fraction >= 0 && fraction <= 1)) {
            throw new IllegalArgumentException("butterfly.coordinator.audit.fraction must be in [0, 1], got " + fraction);
        }
    }

    public StepAuditor.Settings settings() {
        return new StepAuditor.Settings(fraction, beforeSampling, key != 0 ? key : new SecureRandom().nextLong());
    }
}
