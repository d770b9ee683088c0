package io.butterfly.cli.faults;

import java.util.Locale;

/**
 * One fault of a schedule.
 *
 * @param kind    what it does
 * @param target  the service it is done to ("worker-2", "coordinator-1", ...)
 * @param startMs when it starts, from the schedule's start
 * @param lastsMs how long it lasts before it is ended
 * @param skewMs  for {@link FaultKind#CLOCK_SKEW}, how far the target's clock moves (either way); 0 otherwise
 */
public record Fault(FaultKind kind, String target, long startMs, long lastsMs, long skewMs) {

    public long endMs() {
        return startMs + lastsMs;
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "%s %s at %.1f s for %.1f s%s", kind.name().toLowerCase(Locale.ROOT), target,
                startMs / 1e3, lastsMs / 1e3, kind == FaultKind.CLOCK_SKEW ? String.format(Locale.ROOT, " (%+d ms)", skewMs) : "");
    }
}
