package io.butterfly.coordinator.config;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The audit settings' bounds. */
class AuditPropertiesTest {

    @Test
    void aFractionOutsideZeroToOneIsRefused() {
        assertThatThrownBy(() -> new AuditProperties(1.5, false, 0))
                .hasMessageContaining("butterfly.coordinator.audit.fraction");
        assertThatThrownBy(() -> new AuditProperties(Double.NaN, false, 0))
                .hasMessageContaining("butterfly.coordinator.audit.fraction");
    }
}
