package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class TaskAdmissionTest {

    @Test
    void admitsUpToTheLimitRefusesOneMoreAndAdmitsAgainOnceOneEnds() {
        TaskAdmission admission = new TaskAdmission(2);
        TaskAdmission.Permit a = admission.admit();
        TaskAdmission.Permit b = admission.admit();
        assertThat(admission.running()).isEqualTo(2);
        assertThatThrownBy(admission::admit).isInstanceOf(TaskAdmission.TooManyTasksException.class)
                .hasMessageContaining("2 tasks are running").hasMessageContaining("max-concurrent-tasks");
        a.close();
        a.close(); // a second close frees nothing more
        assertThat(admission.running()).isEqualTo(1);
        TaskAdmission.Permit c = admission.admit();
        assertThatThrownBy(admission::admit).isInstanceOf(TaskAdmission.TooManyTasksException.class);
        b.close();
        c.close();
        assertThat(admission.running()).isZero();
    }

    @Test
    void concurrentTasksNeverExceedTheLimit() throws Exception {
        TaskAdmission admission = new TaskAdmission(3);
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        AtomicInteger refused = new AtomicInteger();
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                runs.add(pool.submit(() -> {
                    start.await();
                    for (int i = 0; i < 500; i++) {
                        try (TaskAdmission.Permit ignored = admission.admit()) {
                            most.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            Thread.onSpinWait();
                            inside.decrementAndGet();
                        } catch (TaskAdmission.TooManyTasksException e) {
                            refused.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> r : runs) {
                r.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(most.get()).isBetween(1, 3);
        assertThat(admission.running()).isZero();
    }

    @Test
    void theLimitMustAdmitSomething() {
        assertThatThrownBy(() -> new TaskAdmission(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("max-concurrent-tasks");
    }
}
