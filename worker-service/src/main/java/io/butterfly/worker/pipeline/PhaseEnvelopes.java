package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.Xxh64;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.common.verify.TensorMetadata;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * A step's phase envelope, as one stage keeps it (docs/verified-execution.md): before computing, the sender's
 * contract and the declared tensor metadata must be this stage's, and each sequence's input must hash to what the
 * sender stated; after computing, each sequence's output is hashed for the next stage and the coordinator.
 */
final class PhaseEnvelopes {

    static final String TOKEN_DTYPE = "INT64";
    static final String HIDDEN_DTYPE = "FLOAT32";

    private PhaseEnvelopes() {
    }

    /**
     * Refuses, before a byte of the input is read, a step computed under another contract or declaring another input
     * than this stage takes: token ids {@code INT64 [tokens]} into the first stage, hidden states
     * {@code FLOAT32 [tokens, hidden]} computed under {@code own} into the others, both row-major little-endian.
     */
    static void checkContract(Step step, PartitionSpec spec, PrecisionContract own, int totalTokens) {
        Step.Envelope envelope = step.envelope();
        if (envelope == null || envelope.input() == null) {
            throw new ButterflyException(ErrorCode.CONTRACT_MISMATCH, ErrorKind.INVALID_ARGUMENT,
                    "step " + step.step() + " carries no phase envelope declaring its input");
        }
        if (spec.hasEmbedding()) {
            envelope.input().requireEqual(TensorMetadata.of(TOKEN_DTYPE, totalTokens), "input token ids");
            if (envelope.contract() != null) { // token ids have no precision, but one stated must be this stage's
                own.requireSame(envelope.contract(), "the coordinator");
            }
            return;
        }
        own.requireSame(envelope.contract(), sender(step));
        envelope.input().requireEqual(TensorMetadata.of(HIDDEN_DTYPE, totalTokens, spec.config().hiddenSize()),
                "input hidden states");
    }

    private static String sender(Step step) {
        return step.hashes().isEmpty() ? "the previous stage" : step.hashes().get(step.hashes().size() - 1).nodeId();
    }

    /**
     * Refuses a step whose sequences' inputs do not hash to what the sender stated (CHECKSUM_MISMATCH, DATA_LOSS):
     * the spec's "verify input hash". The tensor's SHA-256 already proved the bytes are the ones sent; this proves
     * they are the ones the sender's stage computed and reported.
     */
    static void checkInputHashes(Step step, StageInput input, int hiddenSize) {
        List<Step.Slice> slices = step.sequences();
        int row = 0;
        for (Step.Slice s : slices) {
            long actual = input instanceof StageInput.Tokens t ? Xxh64.ofLongs(t.ids(), row, s.numTokens())
                    : rows(((StageInput.Hidden) input).littleEndianFloats(), row, s.numTokens(), hiddenSize);
            if (actual != s.inputHash()) {
                throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.DATA_LOSS,
                        "the input of sequence '" + s.sequenceId() + "' hashes to " + Xxh64.hex(actual)
                                + " but its sender stated " + Xxh64.hex(s.inputHash()));
            }
            row += s.numTokens();
        }
    }

    /**
     * Each sequence's output hash, in batch order: its rows of the hidden states, or its row of the logits (0 for a
     * sequence that skips them).
     */
    static long[] outputHashes(Step step, StageResult result) {
        List<Step.Slice> slices = step.sequences();
        long[] hashes = new long[slices.size()];
        int cols = (int) result.shape()[1];
        int row = 0;
        for (int i = 0; i < slices.size(); i++) {
            Step.Slice s = slices.get(i);
            if (result.logits()) {
                if (!s.skipLogits()) {
                    hashes[i] = rows(result.littleEndianFloats(), row++, 1, cols);
                }
            } else {
                hashes[i] = rows(result.littleEndianFloats(), row, s.numTokens(), cols);
                row += s.numTokens();
            }
        }
        return hashes;
    }

    private static long rows(ByteBuffer floats, int firstRow, int rows, int cols) {
        int rowBytes = cols * Float.BYTES;
        return Xxh64.of(floats, floats.position() + firstRow * rowBytes, rows * rowBytes);
    }
}
