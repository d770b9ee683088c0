package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.hash.Xxh64;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * One request's transcript (docs/verified-execution.md): every step that ran for its sequence, with what each stage
 * computed (its output hash), and a hash chain over the tokens it sampled, so that one digest commits to the whole
 * generation. The chain starts from the prompt ({@code genesis}, XXH64 of its token ids) and each sampled token adds a
 * link: {@code link = XXH64(previous link, end, logits hash, token id)}, {@code end} the positions the logits are
 * conditioned on. It takes in only what no placement, split or batch changes (the logits row is the same bits on any
 * healthy pipeline, docs/deterministic-execution.md §3), so a replay of the same request anywhere gives the same
 * digest; the per-stage hashes of the steps say where, and on which worker, two runs parted.
 *
 * <p>Appended on the engine's thread, read by the REST API's: every method is synchronized.
 */
public final class Transcript {

    /** What one stage computed of a step for this sequence: XXH64 of its rows (0 for a last stage with no row). */
    public record StageOutput(String nodeId, String contract, long outputHash, List<LayerOutput> layers) {

        public StageOutput {
            layers = List.copyOf(layers);
        }

        public StageOutput(String nodeId, String contract, long outputHash) {
            this(nodeId, contract, outputHash, List.of());
        }
    }

    /** Per-layer snapshot hash (a request asking for them): the hash of the sequence's rows of a layer's output. */
    public record LayerOutput(int layer, long outputHash) {
    }

    /**
     * A step that ran for the sequence: {@code tokens} positions from {@code position}, the hash of their token ids
     * (the first stage's input) and each stage's output, in pipeline order.
     */
    public record Step(long batch, int position, int tokens, long inputHash, List<StageOutput> stages) {
    }

    /** A sampled token and the chain's link after it. */
    public record Link(int end, long logitsHash, long tokenId, long link) {
    }

    /** What a transcript holds at one moment. */
    public record Snapshot(long genesis, long digest, List<Step> steps, List<Link> links) {
    }

    /** The most steps kept (the links are all kept: one per generated token); older steps are dropped first. */
    static final int MAX_STEPS = 4096;

    private final long genesis;
    private final List<Step> steps = new ArrayList<>();
    private final List<Link> links = new ArrayList<>();
    private long digest;

    public Transcript(long[] prompt) {
        this.genesis = Xxh64.ofLongs(prompt, 0, prompt.length);
        this.digest = genesis;
    }

    synchronized void stepped(Step step) {
        if (steps.size() == MAX_STEPS) {
            steps.remove(0);
        }
        steps.add(step);
    }

    /** A token was sampled from the logits at {@code end} (row hash {@code logitsHash}): the chain grows by a link. */
    synchronized void sampled(int end, long logitsHash, long tokenId) {
        digest = link(digest, end, logitsHash, tokenId);
        links.add(new Link(end, logitsHash, tokenId, digest));
    }

    /** The next link of a chain: XXH64 of the previous link, end, logits hash and token id, little-endian. */
    public static long link(long previous, int end, long logitsHash, long tokenId) {
        ByteBuffer b = ByteBuffer.allocate(4 * Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(previous).putLong(end).putLong(logitsHash).putLong(tokenId);
        return Xxh64.of(b.array());
    }

    public synchronized Snapshot snapshot() {
        return new Snapshot(genesis, digest, List.copyOf(steps), List.copyOf(links));
    }
}
