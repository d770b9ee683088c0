package io.butterfly.coordinator.inference.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Two of three computations of a step decide who computed wrong; seeded random batches and corruptions. */
class AuditVoteTest {

    private static final long SEED = 0x5EED_50L;

    @Test
    void equalHashesAgreeAndOneWrongSequenceIsADispute() {
        SplittableRandom random = new SplittableRandom(SEED);
        for (int trial = 0; trial < 200; trial++) {
            Map<String, Long> right = batch(random);
            AuditVote.Computation served = new AuditVote.Computation("w1", right);
            assertInstanceOf(AuditVote.Agreed.class, AuditVote.compare(served, new AuditVote.Computation("w3", right)));
            // The auditor may audit only some of the batch's sequences: those are what must agree.
            Map<String, Long> some = new HashMap<>(right);
            some.keySet().removeIf(k -> random.nextBoolean() && some.size() > 1);
            assertInstanceOf(AuditVote.Agreed.class, AuditVote.compare(served, new AuditVote.Computation("w3", some)));
            assertInstanceOf(AuditVote.Disputed.class,
                    AuditVote.compare(served, new AuditVote.Computation("w3", flipOne(some, random))));
        }
    }

    @Test
    void theRefereeNamesTheMinorityWhicheverItIs() {
        SplittableRandom random = new SplittableRandom(SEED + 1);
        for (int trial = 0; trial < 200; trial++) {
            Map<String, Long> right = batch(random);
            Map<String, Long> wrong = flipOne(right, random);
            boolean servedWrong = random.nextBoolean();
            AuditVote.Computation served = new AuditVote.Computation("w1", servedWrong ? wrong : right);
            AuditVote.Computation auditor = new AuditVote.Computation("w3", servedWrong ? right : wrong);
            AuditVote.Verdict v = AuditVote.decide(served, auditor, new AuditVote.Computation("w4", right), "step " + trial);
            AuditVote.Minority m = assertInstanceOf(AuditVote.Minority.class, v);
            assertEquals(servedWrong ? "w1" : "w3", m.nodeId());
            assertTrue(m.cause().startsWith("step " + trial + ": w1 computed"), m.cause());
            assertTrue(m.cause().contains("referee w4 computed"), m.cause());
        }
    }

    @Test
    void threeDifferentAnswersDecideNothing() {
        SplittableRandom random = new SplittableRandom(SEED + 2);
        Map<String, Long> right = batch(random);
        Map<String, Long> wrong = flipOne(right, random);
        Map<String, Long> other = flipOne(wrong, random);
        assertInstanceOf(AuditVote.Undecided.class, AuditVote.decide(new AuditVote.Computation("w1", right),
                new AuditVote.Computation("w3", wrong), new AuditVote.Computation("w4", other), "step 1"));
    }

    private static Map<String, Long> batch(SplittableRandom random) {
        Map<String, Long> hashes = new HashMap<>();
        int n = 1 + random.nextInt(8);
        for (int i = 0; i < n; i++) {
            hashes.put("seq-" + i, random.nextLong());
        }
        return hashes;
    }

    /** The same hashes but one sequence's, as a bit flipped in its rows would leave them. */
    private static Map<String, Long> flipOne(Map<String, Long> hashes, SplittableRandom random) {
        Map<String, Long> flipped = new HashMap<>(hashes);
        String victim = flipped.keySet().stream().sorted().skip(random.nextInt(flipped.size())).findFirst().orElseThrow();
        flipped.put(victim, flipped.get(victim) ^ (1L << random.nextInt(64)));
        return flipped;
    }
}
