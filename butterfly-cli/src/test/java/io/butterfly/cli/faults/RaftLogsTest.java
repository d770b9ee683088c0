package io.butterfly.cli.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NavigableMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class RaftLogsTest {

    @Test
    void logsThatAgreeWhereTheyOverlapHaveNoDisagreement() {
        SplittableRandom random = new SplittableRandom(3);
        for (int round = 0; round < 100; round++) {
            NavigableMap<Long, Long> truth = log(random, 50 + random.nextInt(50));
            Map<String, NavigableMap<Long, Long>> logs = new LinkedHashMap<>();
            for (String r : new String[]{"a", "b", "c"}) {
                // each replica holds a window of the same committed log (older entries purged, newer not yet applied)
                long from = random.nextLong(truth.size() / 2);
                long to = truth.size() / 2 + random.nextLong(truth.size() / 2);
                logs.put(r, new TreeMap<>(truth.subMap(from, true, to, true)));
            }
            assertThat(RaftLogs.disagreements(logs)).isEmpty();
            assertThat(RaftLogs.entries(logs)).isPositive();
        }
    }

    @Test
    void aCommittedIndexWithTwoTermsIsADisagreementAtEveryRound() {
        SplittableRandom random = new SplittableRandom(4);
        for (int round = 0; round < 100; round++) {
            NavigableMap<Long, Long> a = log(random, 40);
            NavigableMap<Long, Long> b = new TreeMap<>(a);
            long index = random.nextLong(40);
            b.put(index, a.get(index) + 1);
            assertThat(RaftLogs.disagreements(Map.of("a", a, "b", b))).anyMatch(d -> d.startsWith("index " + index + ":"));
        }
    }

    @Test
    void aTermGoingDownAlongALogIsReported() {
        NavigableMap<Long, Long> log = new TreeMap<>(Map.of(1L, 1L, 2L, 3L, 3L, 2L));
        assertThat(RaftLogs.disagreements(Map.of("a", log))).containsExactly("a: term 2 at index 3 after term 3");
    }

    /** A committed log: terms that only grow, from index 0. */
    private static NavigableMap<Long, Long> log(SplittableRandom random, int size) {
        NavigableMap<Long, Long> log = new TreeMap<>();
        long term = 1;
        for (long i = 0; i < size; i++) {
            term += random.nextInt(10) == 0 ? 1 + random.nextInt(3) : 0;
            log.put(i, term);
        }
        return log;
    }
}
