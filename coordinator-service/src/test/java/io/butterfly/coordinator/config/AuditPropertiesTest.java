package io.butterfly.coordinator.config;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * Audits with several pipelines are refused at start-up (the coordinator's {@code stepAuditor} bean checks before it
 * makes the auditor), naming both settings; either setting alone is accepted.
 */
class AuditPropertiesTest {

    @Test
    void auditsWithSeveralPipelinesAreRefusedNamingBothSettings() {
        assertThatThrownBy(() -> new AuditProperties(0.1, false, 0).checkPipelines(2))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("butterfly.coordinator.audit.fraction=0.1")
                .hasMessageContaining("butterfly.coordinator.planning.pipelines=2");
        assertThatThrownBy(() -> new AuditProperties(1.0, true, 7).checkPipelines(3))
                .hasMessageContaining("butterfly.coordinator.planning.pipelines=3");
        assertThatCode(() -> new AuditProperties(1.0, true, 0).checkPipelines(1)).doesNotThrowAnyException();
        assertThatCode(() -> new AuditProperties(0, false, 0).checkPipelines(4)).doesNotThrowAnyException();
    }

    @Test
    void aFractionOutsideZeroToOneIsRefused() {
        assertThatThrownBy(() -> new AuditProperties(1.5, false, 0))
                .hasMessageContaining("butterfly.coordinator.audit.fraction");
        assertThatThrownBy(() -> new AuditProperties(Double.NaN, false, 0))
                .hasMessageContaining("butterfly.coordinator.audit.fraction");
    }
}
