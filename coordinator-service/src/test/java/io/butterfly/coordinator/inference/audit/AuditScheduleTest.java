package io.butterfly.coordinator.inference.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The audited fraction is the configured one, the choice is reproducible, and the detection bounds are right. */
class AuditScheduleTest {

    @Test
    void auditsTheConfiguredFractionOfSteps() {
        SplittableRandom random = new SplittableRandom(0xA0D17L);
        for (double fraction : new double[]{0.01, 0.1, 0.5, 0.9}) {
            AuditSchedule schedule = new AuditSchedule(fraction, random.nextLong());
            int audited = 0;
            int steps = 20_000;
            for (int i = 0; i < steps; i++) {
                if (schedule.audits("seq-" + random.nextInt(100), random.nextInt(4096))) {
                    audited++;
                }
            }
            // Binomial: 5 standard deviations either side.
            double sd = Math.sqrt(steps * fraction * (1 - fraction));
            assertEquals(steps * fraction, audited, 5 * sd, "fraction " + fraction);
        }
    }

    @Test
    void theChoiceDependsOnTheKeyAndIsTheSameEveryTime() {
        AuditSchedule a = new AuditSchedule(0.5, 1);
        AuditSchedule same = new AuditSchedule(0.5, 1);
        AuditSchedule other = new AuditSchedule(0.5, 2);
        int differ = 0;
        for (int p = 0; p < 1000; p++) {
            assertEquals(a.audits("s", p), same.audits("s", p));
            differ += a.audits("s", p) != other.audits("s", p) ? 1 : 0;
        }
        assertTrue(differ > 350 && differ < 650, "another key chooses other steps: " + differ + " of 1000 differ");
    }

    @Test
    void noneAndAllAreExact() {
        for (int p = 0; p < 100; p++) {
            assertFalse(new AuditSchedule(0, 7).audits("s", p));
            assertTrue(new AuditSchedule(1, 7).audits("s", p));
        }
        assertThrows(IllegalArgumentException.class, () -> new AuditSchedule(1.5, 0));
        assertThrows(IllegalArgumentException.class, () -> new AuditSchedule(Double.NaN, 0));
    }

    @Test
    void detectionBoundsOfTheIssuesCase() {
        // One output in 50 corrupted, 10 % audited: caught after 500 outputs on average, within 2301 with 99 %.
        AuditSchedule tenPercent = new AuditSchedule(0.1, 0);
        assertEquals(500, tenPercent.meanOutputsToDetection(1 / 50.0), 1e-9);
        assertEquals(2301, tenPercent.outputsToDetection(1 / 50.0, 0.99));
        // Every output audited: the first corrupted one is caught.
        assertEquals(1, new AuditSchedule(1, 0).outputsToDetection(1, 0.99));
        assertEquals(50, new AuditSchedule(1, 0).meanOutputsToDetection(1 / 50.0), 1e-9);
        // Simulated: the 99 % bound holds in at least 97 % of 1000 seeded runs (binomial slack).
        SplittableRandom random = new SplittableRandom(42);
        int within = 0;
        for (int run = 0; run < 1000; run++) {
            AuditSchedule s = new AuditSchedule(0.1, random.nextLong());
            int n = 1;
            while (!(random.nextDouble() < 1 / 50.0 && s.audits("seq", n))) {
                n++;
            }
            within += n <= 2301 ? 1 : 0;
        }
        assertTrue(within >= 970, within + " of 1000 runs caught within the bound");
    }
}
