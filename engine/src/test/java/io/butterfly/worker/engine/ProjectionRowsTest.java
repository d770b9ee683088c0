package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.IValue;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The projections a CPU stage computes with give a row the same bits whatever other rows share the product, at the
 * sizes a real model has (the bench-100m Llama's q|k|v and down projections): what lets a stage on oneDNN's kernels
 * skip the padding of batch-invariant steps ({@link TorchScript.Linear#rowQuantum()} 1). Products of 1 to 200 rows
 * (across the 64-row blocks linear_onednn.py cuts, and past the ~96 rows where oneDNN changes kernel) at random
 * offsets (seeded) are compared with the same rows of a 256-row product.
 */
class ProjectionRowsTest {

    @Test
    void aRowRoundsAlikeWhateverItIsComputedWith() {
        EngineSetup.start(0);
        try (NDManager m = NDManager.newBaseManager(EngineSetup.ENGINE);
             TorchScript probe = TorchScript.compileForCpu(m, "Probe", "probe.py", false)) {
            assumeTrue(probe.linear().rowQuantum() == 1, "projections are " + probe.linear() + ", padded instead");
            Random rnd = new Random(17);
            for (int[] outIn : new int[][]{{2304, 768}, {768, 2048}}) {
                float[] values = new float[outIn[0] * outIn[1]];
                for (int i = 0; i < values.length; i++) {
                    values[i] = (float) rnd.nextGaussian() * 0.02f;
                }
                StageWeights weights = new StageWeights(probe, m, WeightDtype.F32);
                weights.addProjection(m.create(values, new Shape(outIn[0], outIn[1])), null);
                float[] xs = new float[300 * outIn[1]];
                for (int i = 0; i < xs.length; i++) {
                    xs[i] = (float) rnd.nextGaussian();
                }
                NDArray x = m.create(xs, new Shape(300, outIn[1]));
                try (IValue list = weights.toList()) {
                    for (int trial = 0; trial < 12; trial++) {
                        int rows = trial < 4 ? new int[]{1, 64, 65, 200}[trial] : 1 + rnd.nextInt(200);
                        int offset = rnd.nextInt(300 - 256);
                        float[] part = product(probe, x, offset, rows, list);
                        float[] whole = product(probe, x, offset, 256, list);
                        assertThat(part).as("%d rows at %d of [%d, %d]", rows, offset, outIn[0], outIn[1])
                                .isEqualTo(Arrays.copyOf(whole, part.length));
                    }
                }
            }
        }
    }

    private static float[] product(TorchScript probe, NDArray x, int offset, int rows, IValue weights) {
        try (NDManager step = x.getManager().newSubManager(); ScriptArgs args = new ScriptArgs()) {
            NDArray input = x.get(new NDIndex().addSliceDim(offset, offset + rows)).duplicate();
            NDArray[] out = probe.callForArrays(step, "products", args.tensor(input), weights);
            return out[0].toFloatArray();
        }
    }
}
