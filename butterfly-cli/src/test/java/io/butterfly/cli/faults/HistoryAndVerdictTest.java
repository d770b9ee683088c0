package io.butterfly.cli.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HistoryAndVerdictTest {

    @Test
    void twoReplicasLeadingOneTermIsReportedAndOneLeaderPerTermIsNot() {
        History h = new History();
        h.leader(3, "coordinator-0");
        h.leader(3, "coordinator-0");
        h.leader(4, "coordinator-1");
        assertThat(h.termsWithTwoLeaders()).isEmpty();
        h.leader(4, "coordinator-2");
        assertThat(h.termsWithTwoLeaders()).isEqualTo(Map.of(4L, Set.of("coordinator-1", "coordinator-2")));
        assertThat(h.termsSeen()).isEqualTo(2);
    }

    @Test
    void outcomesAreCountedAndWrongOnesKept() {
        History h = new History();
        h.request(History.Outcome.COMPLETED, "");
        h.request(History.Outcome.FAILED_CLEARLY, "HTTP 503 {\"detail\": \"no leader\"}");
        h.request(History.Outcome.WRONG_TOKENS, "token 5 as index 2");
        h.epoch(3);
        h.epoch(2);
        assertThat(h.requests()).isEqualTo(3);
        assertThat(h.count(History.Outcome.COMPLETED)).isEqualTo(1);
        assertThat(h.wrongOutcomes()).containsExactly("WRONG_TOKENS: token 5 as index 2");
        assertThat(h.someFailures()).containsExactly("HTTP 503 {\"detail\": \"no leader\"}");
        assertThat(h.maxEpoch()).isEqualTo(3);
    }

    @Test
    void verdictsAddUpAndPrintTheSummaryLine() {
        Verdict a = new Verdict(1, 4, 10, 9, 1, 0, 0, 0, List.of(1_000L));
        Verdict b = new Verdict(1, 5, 12, 12, 0, 0, 0, 0, List.of(3_000L));
        Verdict total = Verdict.none().plus(a).plus(b);
        assertThat(total.clean()).isTrue();
        assertThat(total.line()).isEqualTo("schedules=2 faults=9 requests=22 completed=21 failed_clearly=1 lost=0"
                + " wrong_tokens=0 split_brain=0 ready_after_last_fault_s_p50=1.00 p99=3.00");
        assertThat(total.plus(new Verdict(1, 1, 1, 0, 0, 0, 1, 0, List.of(1L))).clean()).isFalse();
        assertThat(total.plus(new Verdict(1, 1, 1, 1, 0, 0, 0, 0, List.of())).clean()).as("never READY").isFalse();
    }
}
