package io.butterfly.coordinator.structured;

import java.util.BitSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One generation's constraint: which tokens may come next so that its bytes stay a prefix of a value of the grammar,
 * and the matcher's state after the tokens so far. The state is a function of the tokens alone, so a generation that
 * is replayed (a resume after a lost stage or coordinator, its recorded tokens appended again) is back in the same
 * state and allows the same tokens. Only the engine's thread touches one; masks are cached per state.
 */
public final class TokenConstraint {

    /** Masks kept per constraint: a string without a length bound stays in one state, a bounded one in few. */
    private static final int CACHED_MASKS = 256;

    private final Grammar grammar;
    private final Vocabulary vocabulary;
    private final Map<Grammar.State, BitSet> masks = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Grammar.State, BitSet> eldest) {
            return size() > CACHED_MASKS;
        }
    };
    private Grammar.State state;
    private boolean ended;
    /** Masks {@link #mask} had to compute itself, the logits waiting (read by other threads: tests, metrics). */
    private volatile int computedWhenNeeded;

    public TokenConstraint(Grammar grammar, Vocabulary vocabulary) {
        this.grammar = grammar;
        this.vocabulary = vocabulary;
        this.state = grammar.start();
    }

    /** The tokens that may come next (end tokens once the value is complete); empty once it is finished. */
    public BitSet allowed() {
        if (ended || state.finished()) {
            return new BitSet();
        }
        return masks.computeIfAbsent(state, vocabulary::allowed);
    }

    /**
     * Computes the mask of the current state ahead of {@link #mask}: the engine calls it once the step whose logits
     * it will mask is sent, so that the walk of the vocabulary runs while the stages compute.
     */
    public void prepare() {
        allowed();
    }

    /** Masks {@code logits} in place: every token that may not come next gets -infinity. */
    public void mask(float[] logits) {
        if (!ended && !state.finished() && !masks.containsKey(state)) {
            computedWhenNeeded++;
        }
        BitSet allowed = allowed();
        if (allowed.isEmpty()) {
            throw new IllegalStateException("no token of the vocabulary continues the JSON value");
        }
        for (int id = allowed.nextClearBit(0); id < logits.length; id = allowed.nextClearBit(id + 1)) {
            logits[id] = Float.NEGATIVE_INFINITY;
        }
    }

    /**
     * Token {@code id} was chosen (or replayed): the state moves past its bytes (it may end inside a character, which
     * the next token completes). An end token ends the value (it must be complete); a token the grammar refuses is
     * refused here (it cannot have been chosen under the mask).
     */
    public void accept(long id) {
        if (ended) {
            throw new IllegalStateException("the constrained value has ended");
        }
        if (vocabulary.isEnd((int) id)) {
            if (!state.accepting()) {
                throw new IllegalStateException("end token " + id + " before the JSON value is complete");
            }
            ended = true;
            return;
        }
        byte[] bytes = vocabulary.spelling((int) id);
        Grammar.State next = bytes == null ? null : state.advance(bytes);
        if (next == null) {
            throw new IllegalStateException("token " + id + " (" + (bytes == null ? "never allowed"
                    : HexFormat.ofDelimiter(" ").formatHex(bytes)) + ") does not continue the JSON value");
        }
        state = next;
    }

    /** How many masks were computed only when the logits had come ({@link #prepare} had not run for that state). */
    public int computedWhenNeeded() {
        return computedWhenNeeded;
    }

    /** Whether the value is complete and nothing may follow it: the generation ends here. */
    public boolean finished() {
        return ended || state.finished();
    }

    Grammar grammar() {
        return grammar;
    }
}
