package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A model is planned by the bytes its shards hold in their format: Llama 3.1 8B's shape stored in float32 and in
 * 4 bits (Q4_0 matrices, a Q6_K head, float32 norms: what {@code model generate --shape llama-3.1-8b --dtype q4}
 * writes), with shard sizes as the registry stores them.
 */
class PlansCountFormatBytesTest {

    private static final int LAYERS = 32;
    private static final long HIDDEN = 4096;
    private static final long KV = 1024;
    private static final long MLP = 14336;
    private static final long VOCAB = 128_256;
    private static final ModelConfig LLAMA_8B = new ModelConfig(Architecture.LLAMA, LAYERS, (int) HIDDEN, 32, 8,
            (int) MLP, (int) VOCAB, 131_072, 1e-5, 500_000.0, false, 128_000, 128_001);
    private static final ModelFootprints.Settings SETTINGS = new ModelFootprints.Settings(0, 1, 64L << 20, 2L << 30);
    private static final long GIB = 1L << 30;

    /** Bytes of {@code values} in a ggml block type of {@code blockBytes} per {@code blockValues}. */
    private static long blocks(long values, long blockBytes, long blockValues) {
        return values / blockValues * blockBytes;
    }

    private static Manifest llama8b(String dtype) {
        boolean q4 = dtype.equals("Q4_0");
        long matrices = 2 * HIDDEN * HIDDEN + 2 * KV * HIDDEN + 3 * MLP * HIDDEN;
        long norms = 2 * HIDDEN * 4;
        long layer = (q4 ? blocks(matrices, 18, 32) : matrices * 4) + norms;
        long embedding = q4 ? blocks(VOCAB * HIDDEN, 18, 32) : VOCAB * HIDDEN * 4;
        long head = (q4 ? blocks(VOCAB * HIDDEN, 210, 256) : VOCAB * HIDDEN * 4) + HIDDEN * 4;
        List<ManifestFile> files = new ArrayList<>();
        files.add(file("embed.safetensors", FileKind.EMBEDDING, embedding, null, null));
        for (int l = 0; l < LAYERS; l++) {
            files.add(file(String.format("layer-%05d.safetensors", l), FileKind.LAYER, layer, l, l + 1));
        }
        files.add(file("head.safetensors", FileKind.HEAD, head, null, null));
        return new Manifest("llama-3.1-8b", "llama", "1", LAYERS, 8_030_261_248L, 16, 64, dtype, files, "", 0, null,
                null);
    }

    private static ManifestFile file(String name, FileKind kind, long size, Integer start, Integer end) {
        return new ManifestFile(name, size, "sha256", "", kind, start, end, "safetensors");
    }

    private static List<WorkerCapacity> workers(long memoryBytes) {
        return List.of(new WorkerCapacity("worker-0", 50, memoryBytes), new WorkerCapacity("worker-1", 50, memoryBytes),
                new WorkerCapacity("worker-2", 50, memoryBytes));
    }

    private static List<Integer> counts(PartitionPlan plan) {
        return plan.stages().stream().map(StageAssignment::numLayers).toList();
    }

    @Test
    void theHeadWeighsWhatItsFormatMakesItAgainstALayer() {
        ModelFootprint f32 = ModelFootprints.of(llama8b("F32"), LLAMA_8B, SETTINGS, 4);
        ModelFootprint q4 = ModelFootprints.of(llama8b("Q4_0"), LLAMA_8B, SETTINGS, 4);
        // float32: a head of 525 M values against layers of 218 M; in 4 bits the head keeps 6.56 bits a value
        // (Q6_K) where the layers have 4.5 (Q4_0).
        assertEquals(2.41, CapacityWeightedPlanner.headInLayers(f32), 0.01);
        assertEquals(3.51, CapacityWeightedPlanner.headInLayers(q4), 0.01);
        CapacityWeightedPlanner planner = new CapacityWeightedPlanner();
        assertEquals(List.of(12, 11, 9), counts(planner.plan(f32, workers(0))));
        assertEquals(List.of(12, 12, 8), counts(planner.plan(q4, workers(0))));
    }

    /**
     * Three workers of 8 GiB: the 8B in float32 (30 GiB of weights) does not fit and is refused naming both figures;
     * in 4 bits (4.3 GiB, plus a 2 GiB KV budget and the headroom) it is planned, by either planner, each stage within
     * its worker's memory.
     */
    @Test
    void aModelThatFitsOnlyInFourBitsIsPlannedInFourBits() {
        ModelFootprint f32 = ModelFootprints.of(llama8b("F32"), LLAMA_8B, SETTINGS, 4);
        ModelFootprint q4 = ModelFootprints.of(llama8b("Q4_0"), LLAMA_8B, SETTINGS, 4);
        List<WorkerCapacity> workers = workers(8 * GIB);
        FeasibilityReport refused = FeasibilityCheck.check(f32, workers);
        assertFalse(refused.feasible());
        assertTrue(refused.reason().startsWith("InsufficientResources"), refused.reason());
        assertTrue(refused.requiredBytes() > 30 * GIB, refused.reason());
        assertThrows(InfeasiblePlanException.class, () -> new CapacityWeightedPlanner().plan(f32, workers));
        assertThrows(InfeasiblePlanException.class, () -> new OptimalPlanner().plan(f32, workers));

        assertTrue(FeasibilityCheck.check(q4, workers).feasible());
        assertTrue(q4.totalBytes(3) < 7 * GIB, q4.toString());
        for (PartitionPlanner planner : List.of(new CapacityWeightedPlanner(), new OptimalPlanner())) {
            PartitionPlan plan = planner.plan(q4, workers);
            assertEquals(LAYERS, plan.numLayers());
            for (StageAssignment s : plan.stages()) {
                assertTrue(q4.stageBytes(s.layerStart(), s.layerEnd()) <= 8 * GIB, s.toString());
            }
        }
        assertEquals(List.of(12, 12, 8), counts(new CapacityWeightedPlanner().plan(q4, workers)));
    }

    /** Workers small enough that the float32 model's layers cap their shares: the 4-bit one is split by throughput. */
    @Test
    void memoryCapsTheFloat32SharesButNotTheFourBitOnes() {
        ModelFootprint f32 = ModelFootprints.of(llama8b("F32"), LLAMA_8B, SETTINGS, 4);
        ModelFootprint q4 = ModelFootprints.of(llama8b("Q4_0"), LLAMA_8B, SETTINGS, 4);
        List<WorkerCapacity> workers = List.of(new WorkerCapacity("worker-0", 100, 64 * GIB),
                new WorkerCapacity("worker-1", 100, 6 * GIB), new WorkerCapacity("worker-2", 100, 64 * GIB));
        List<Integer> f32Counts = counts(new CapacityWeightedPlanner().plan(f32, workers));
        assertTrue(f32Counts.get(1) <= 6, "float32 layers of 0.8 GiB on a 6 GiB worker: " + f32Counts);
        assertEquals(List.of(12, 12, 8), counts(new CapacityWeightedPlanner().plan(q4, workers)));
    }
}
