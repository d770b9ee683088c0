package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.Xxh64;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.common.verify.TensorMetadata;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A stage's phase envelope: a step computed under another contract or declaring another tensor is refused with
 * CONTRACT_MISMATCH before a byte is read, an input that does not hash to what its sender stated with CHECKSUM_MISMATCH,
 * and each sequence's output hash is the hash of its own rows (so it does not depend on what shares the batch).
 */
class PhaseEnvelopesTest {

    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 4, 8, 2, 1, 16, 50, 64, 1e-5,
            10000.0, false, 1, 2);
    private static final PartitionSpec FIRST = new PartitionSpec(CONFIG, 0, 2, true, false);
    private static final PartitionSpec LATER = new PartitionSpec(CONFIG, 2, 4, false, true);
    private static final PrecisionContract OURS = new PrecisionContract("F32", "FLOAT32", "INT8");

    @Test
    void hiddenStatesOfAnotherContractOrShapeAreRefusedNamingBoth() {
        List<Step.Slice> slices = List.of(slice("a", 2, 0), slice("b", 1, 0));
        TensorMetadata hidden = TensorMetadata.of("FLOAT32", 3, 8);
        assertThatCode(() -> PhaseEnvelopes.checkContract(step(slices, OURS, hidden), LATER, OURS, 3))
                .doesNotThrowAnyException();

        for (PrecisionContract other : List.of(new PrecisionContract("F16", "FLOAT32", "INT8"),
                new PrecisionContract("F32", "FLOAT32", "F32"), new PrecisionContract("F32", "FLOAT16", "INT8"))) {
            ButterflyException e = catchThrowableOfType(ButterflyException.class,
                    () -> PhaseEnvelopes.checkContract(step(slices, other, hidden), LATER, OURS, 3));
            assertThat(e.code()).isEqualTo(ErrorCode.CONTRACT_MISMATCH);
            assertThat(e.kind()).isEqualTo(ErrorKind.INVALID_ARGUMENT);
            assertThat(e.getMessage()).contains(other.toString(), OURS.toString());
        }
        for (TensorMetadata declared : List.of(TensorMetadata.of("FLOAT32", 3, 9), TensorMetadata.of("FLOAT16", 3, 8),
                new TensorMetadata("FLOAT32", List.of(3L, 8L), "column-major"), TensorMetadata.of("FLOAT32", 24))) {
            ButterflyException e = catchThrowableOfType(ButterflyException.class,
                    () -> PhaseEnvelopes.checkContract(step(slices, OURS, declared), LATER, OURS, 3));
            assertThat(e.code()).isEqualTo(ErrorCode.CONTRACT_MISMATCH);
            assertThat(e.getMessage()).contains(declared.toString(), "FLOAT32[3, 8] row-major-le");
        }
        ButterflyException none = catchThrowableOfType(ButterflyException.class,
                () -> PhaseEnvelopes.checkContract(new Step("t", 0, 1, slices, null, List.of(), null, List.of()),
                        LATER, OURS, 3));
        assertThat(none.code()).isEqualTo(ErrorCode.CONTRACT_MISMATCH);
        ButterflyException unstated = catchThrowableOfType(ButterflyException.class,
                () -> PhaseEnvelopes.checkContract(step(slices, null, hidden), LATER, OURS, 3));
        assertThat(unstated.code()).isEqualTo(ErrorCode.CONTRACT_MISMATCH);
    }

    @Test
    void tokenIdsNeedNoContractButTheirDeclaration() {
        List<Step.Slice> slices = List.of(slice("a", 4, 0));
        assertThatCode(() -> PhaseEnvelopes.checkContract(step(slices, null, TensorMetadata.of("INT64", 4)), FIRST,
                OURS, 4)).doesNotThrowAnyException();
        ButterflyException e = catchThrowableOfType(ButterflyException.class, () -> PhaseEnvelopes.checkContract(
                step(slices, null, TensorMetadata.of("INT32", 4)), FIRST, OURS, 4));
        assertThat(e.code()).isEqualTo(ErrorCode.CONTRACT_MISMATCH);
    }

    @Test
    void inputHashesAreVerifiedPerSequenceAndOutputHashesDependOnTheSequenceAlone() {
        Random random = new Random(50);
        for (int trial = 0; trial < 40; trial++) {
            int n = 1 + random.nextInt(4);
            List<Step.Slice> slices = new ArrayList<>();
            List<float[]> rows = new ArrayList<>();
            int total = 0;
            for (int i = 0; i < n; i++) {
                int tokens = 1 + random.nextInt(3);
                float[] values = new float[tokens * 8];
                for (int j = 0; j < values.length; j++) {
                    values[j] = (float) random.nextGaussian();
                }
                rows.add(values);
                slices.add(slice("s" + i, tokens, Xxh64.of(floats(values))));
                total += tokens;
            }
            ByteBuffer all = ByteBuffer.allocate(total * 8 * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            for (float[] r : rows) {
                for (float v : r) {
                    all.putFloat(v);
                }
            }
            all.flip();
            Step step = step(slices, OURS, TensorMetadata.of("FLOAT32", total, 8));
            assertThatCode(() -> PhaseEnvelopes.checkInputHashes(step, new StageInput.Hidden(all), 8))
                    .doesNotThrowAnyException();

            // the output hashes: each sequence's are its own rows', whatever else the batch holds
            long[] out = PhaseEnvelopes.outputHashes(step, new StageResult(all, new long[]{total, 8}, false));
            for (int i = 0; i < n; i++) {
                assertThat(out[i]).isEqualTo(slices.get(i).inputHash());
            }

            // one bit flipped anywhere: the sequence it belongs to is named
            int bit = random.nextInt(total * 8 * 32);
            ByteBuffer flipped = ByteBuffer.allocate(all.remaining()).order(ByteOrder.LITTLE_ENDIAN).put(all.duplicate()).flip();
            flipped.put(bit / 8, (byte) (flipped.get(bit / 8) ^ (1 << (bit % 8))));
            int row = bit / 32 / 8;
            int owner = 0;
            for (int seen = slices.get(0).numTokens(); seen <= row; seen += slices.get(++owner).numTokens()) {
            }
            ButterflyException e = catchThrowableOfType(ButterflyException.class,
                    () -> PhaseEnvelopes.checkInputHashes(step, new StageInput.Hidden(flipped), 8));
            assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
            assertThat(e.kind()).isEqualTo(ErrorKind.DATA_LOSS);
            assertThat(e.getMessage()).contains("'s" + owner + "'");
        }
    }

    @Test
    void theLastStageHashesEachLogitsRowAndNoneForASkippingSequence() {
        float[] logits = {1, 2, 3, 4, 5, 6};
        List<Step.Slice> slices = List.of(slice("a", 3, 0), skipping("b"), slice("c", 1, 0));
        Step step = step(slices, OURS, TensorMetadata.of("FLOAT32", 5, 8));
        long[] out = PhaseEnvelopes.outputHashes(step, new StageResult(floats(logits), new long[]{2, 3}, true));
        assertThat(out).containsExactly(Xxh64.of(floats(new float[]{1, 2, 3})), 0,
                Xxh64.of(floats(new float[]{4, 5, 6})));
    }

    private static ByteBuffer floats(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        return b;
    }

    private static Step.Slice slice(String id, int tokens, long inputHash) {
        return new Step.Slice(id, 0, tokens, 0, Map.of(), false, false, 0, inputHash);
    }

    private static Step.Slice skipping(String id) {
        return new Step.Slice(id, 0, 1, 0, Map.of(), true, false, 0, 0);
    }

    private static Step step(List<Step.Slice> slices, PrecisionContract contract, TensorMetadata input) {
        return new Step("t", 0, 1, slices, null, List.of(), null, List.of(), new Step.Envelope(contract, input),
                List.of(new StageHashes("worker-0", OURS, new long[0])));
    }
}
