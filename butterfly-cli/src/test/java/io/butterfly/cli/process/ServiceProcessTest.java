package io.butterfly.cli.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ServiceProcessTest {

    @Test
    void aProcessListLineHoldsNameRolePidNodeIdAndPorts() {
        ServiceProcess p = ServiceProcess.parse("coordinator-1 coordinator 4242 coordinator-1 9083 10083");
        assertThat(p).isEqualTo(new ServiceProcess("coordinator-1", "coordinator", 4242, "coordinator-1", 9083, 10083));
        assertThat(p.line()).isEqualTo("coordinator-1 coordinator 4242 coordinator-1 9083 10083");
        assertThatThrownBy(() -> ServiceProcess.parse("worker-0 worker 1")).hasMessageContaining("worker-0 worker 1");
    }

    @Test
    void aCommandRecordingAClassDataArchiveIsRecognised() {
        assertThat(ServiceImages.records(java.util.List.of("java", "-XX:ArchiveClassesAtExit=/x/recorded-a.jsa", "-jar", "a.jar")))
                .isTrue();
        assertThat(ServiceImages.records(java.util.List.of("java", "-XX:AOTCacheOutput=/x/recorded-a.aot", "-jar", "a.jar")))
                .isTrue();
        assertThat(ServiceImages.records(java.util.List.of("java", "-XX:SharedArchiveFile=/x/classes.jsa", "-jar", "a.jar")))
                .isFalse();
    }
}
