package io.butterfly.cli.faults;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A seeded schedule of faults, one after another: each starts a random gap after the previous one ended, so at most
 * one service is faulty at a time (two of three coordinators and every stage but one always run, as a cluster of
 * this size is built to survive). The same seed, targets and settings give the same schedule.
 *
 * @param seed   what it was drawn from
 * @param faults in the order they start
 */
public record FaultSchedule(long seed, List<Fault> faults) {

    /**
     * What a schedule is drawn from.
     *
     * @param faults   how many
     * @param kinds    the kinds drawn from (each equally likely)
     * @param targets  the services a fault may hit (each equally likely)
     * @param gap      the pause before each fault, drawn between min and max
     * @param lasts    how long each fault lasts, drawn between min and max
     * @param maxSkew  the largest clock skew, either way
     * @param skewTargets the services a clock skew may hit (those that read a wall clock)
     */
    public record Settings(int faults, List<FaultKind> kinds, List<String> targets, Duration gapMin, Duration gapMax,
                           Duration lastsMin, Duration lastsMax, Duration maxSkew, List<String> skewTargets) {
        public Settings {
            if (faults < 1 || kinds.isEmpty() || targets.isEmpty() || gapMin.compareTo(gapMax) > 0
                    || lastsMin.compareTo(lastsMax) > 0 || (kinds.contains(FaultKind.CLOCK_SKEW) && skewTargets.isEmpty())) {
                throw new IllegalArgumentException("a schedule needs faults, kinds, targets (and skew targets for clock"
                        + " skews) and min <= max");
            }
            kinds = List.copyOf(kinds);
            targets = List.copyOf(targets);
            skewTargets = List.copyOf(skewTargets);
        }
    }

    public FaultSchedule {
        faults = List.copyOf(faults);
    }

    public static FaultSchedule generate(long seed, Settings s) {
        SplittableRandom random = new SplittableRandom(seed);
        List<Fault> faults = new ArrayList<>();
        long at = 0;
        for (int i = 0; i < s.faults(); i++) {
            at += between(random, s.gapMin(), s.gapMax());
            FaultKind kind = s.kinds().get(random.nextInt(s.kinds().size()));
            List<String> among = kind == FaultKind.CLOCK_SKEW ? s.skewTargets() : s.targets();
            String target = among.get(random.nextInt(among.size()));
            long lasts = between(random, s.lastsMin(), s.lastsMax());
            long skew = 0;
            if (kind == FaultKind.CLOCK_SKEW) {
                long max = Math.max(1, s.maxSkew().toMillis());
                skew = (random.nextBoolean() ? 1 : -1) * (1 + random.nextLong(max));
            }
            faults.add(new Fault(kind, target, at, lasts, skew));
            at += lasts;
        }
        return new FaultSchedule(seed, faults);
    }

    private static long between(SplittableRandom random, Duration min, Duration max) {
        long lo = min.toMillis();
        long hi = max.toMillis();
        return lo == hi ? lo : lo + random.nextLong(hi - lo + 1);
    }

    /** When the last fault ends, from the schedule's start. */
    public long endMs() {
        return faults.isEmpty() ? 0 : faults.get(faults.size() - 1).endMs();
    }
}
