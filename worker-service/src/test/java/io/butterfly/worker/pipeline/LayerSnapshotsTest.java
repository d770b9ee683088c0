package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.hash.Xxh64;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Per-layer snapshot hashes of a step, and fault injection at a layer (seeded random batches). */
class LayerSnapshotsTest {

    @Test
    void eachLayerHashesEachSequencesRowsUnderTheModelsLayerIndex() {
        SplittableRandom random = new SplittableRandom(50);
        for (int round = 0; round < 50; round++) {
            int hidden = 1 + random.nextInt(16);
            int[] tokens = random.ints(1 + random.nextInt(4), 1, 6).toArray();
            int rows = java.util.Arrays.stream(tokens).sum();
            int first = random.nextInt(10);
            LayerSnapshots snapshots = new LayerSnapshots(first, tokens, hidden, true, null);
            ByteBuffer[] outputs = new ByteBuffer[1 + random.nextInt(4)];
            for (int l = 0; l < outputs.length; l++) {
                outputs[l] = randomRows(random, rows * hidden);
                snapshots.afterLayer(l, outputs[l]);
            }
            assertThat(snapshots.layers()).hasSize(outputs.length);
            for (int l = 0; l < outputs.length; l++) {
                StageHashes.Layer layer = snapshots.layers().get(l);
                assertThat(layer.layer()).isEqualTo(first + l);
                int row = 0;
                for (int i = 0; i < tokens.length; i++) {
                    assertThat(layer.outputHashes()[i])
                            .isEqualTo(Xxh64.of(outputs[l], row * hidden * 4, tokens[i] * hidden * 4));
                    row += tokens[i];
                }
            }
        }
    }

    @Test
    void faultInjectionAtALayerFlipsOneBitThereBeforeItIsHashedAndNoneInTheStagesOutput() {
        SplittableRandom random = new SplittableRandom(7);
        OutputCorruption corruption = new OutputCorruption(1, 3, 1);
        assertThat(corruption.drawStep()).isTrue();
        LayerSnapshots snapshots = new LayerSnapshots(4, new int[]{2, 1}, 8, true, corruption);
        ByteBuffer layer0 = randomRows(random, 24);
        ByteBuffer layer1 = randomRows(random, 24);
        byte[] before0 = bytes(layer0);
        byte[] before1 = bytes(layer1);
        snapshots.afterLayer(0, layer0);
        snapshots.afterLayer(1, layer1);
        assertThat(bytes(layer0)).isEqualTo(before0);
        assertThat(differingBits(before1, bytes(layer1))).isEqualTo(1);
        ByteBuffer healthy = ByteBuffer.wrap(before1);
        assertThat(snapshots.layers().get(1).outputHashes()[0] == Xxh64.of(healthy, 0, 64)
                && snapshots.layers().get(1).outputHashes()[1] == Xxh64.of(healthy, 64, 32)).isFalse();
        assertThat(corruption.corrupted()).isEqualTo(1);
        // a corruption at a layer leaves the stage's output to the layers
        var result = new io.butterfly.worker.engine.StageResult(randomRows(random, 24), new long[]{3, 8}, false);
        assertThat(corruption.apply(result)).isSameAs(result);
        // off: no step is drawn
        assertThat(new OutputCorruption(0, 3, 1).drawStep()).isFalse();
        assertThat(new OutputCorruption(1, 3).drawStep()).isFalse();
    }

    private static ByteBuffer randomRows(SplittableRandom random, int floats) {
        ByteBuffer b = ByteBuffer.allocate(floats * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < floats; i++) {
            b.putFloat((float) random.nextGaussian());
        }
        return b.flip();
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    private static int differingBits(byte[] a, byte[] b) {
        int bits = 0;
        for (int i = 0; i < a.length; i++) {
            bits += Integer.bitCount((a[i] ^ b[i]) & 0xff);
        }
        return bits;
    }
}
