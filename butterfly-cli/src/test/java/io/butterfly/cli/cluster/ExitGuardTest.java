package io.butterfly.cli.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ExitGuardTest {

    @Test
    void runsItsCleanUpOnceWhenClosedArmed() {
        AtomicInteger runs = new AtomicInteger();
        ExitGuard guard = ExitGuard.arm(runs::incrementAndGet);
        guard.close();
        guard.close();
        assertThat(runs).hasValue(1);
    }

    @Test
    void aDisarmedGuardRunsNothing() {
        AtomicInteger runs = new AtomicInteger();
        try (ExitGuard guard = ExitGuard.arm(runs::incrementAndGet)) {
            guard.disarm();
        }
        assertThat(runs).hasValue(0);
    }
}
