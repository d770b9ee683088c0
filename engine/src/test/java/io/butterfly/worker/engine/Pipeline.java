package io.butterfly.worker.engine;

import java.io.UncheckedIOException;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.model.generate.ModelGenerator;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Test driver: a chain of executors for contiguous layer ranges, handing hidden states from stage to
 * stage as little-endian float32 bytes copied into a fresh buffer, as they arrive off the wire.
 */
final class Pipeline implements AutoCloseable {

    private final List<DjlPartitionExecutor> stages;

    private Pipeline(List<DjlPartitionExecutor> stages) {
        this.stages = stages;
    }

    /** Stages cut at the given boundaries, e.g. {0, 2, 4} for [0,2) and [2,4). */
    static Pipeline split(io.butterfly.common.model.ModelConfig config, int[] bounds, Path shardDir, ExecutorOptions options)
            throws IOException {
        List<DjlPartitionExecutor> stages = new ArrayList<>();
        try {
            for (int i = 0; i + 1 < bounds.length; i++) {
                PartitionSpec spec = new PartitionSpec(config, bounds[i], bounds[i + 1], i == 0, i + 2 == bounds.length);
                stages.add(DjlPartitionExecutor.load(spec, shardsFor(spec, shardDir), options));
            }
        } catch (IOException | RuntimeException e) {
            stages.forEach(DjlPartitionExecutor::close);
            throw e;
        }
        return new Pipeline(stages);
    }

    /**
     * The files of a model written in per-layer files ({@link ModelGenerator.Options#withPerLayerFiles()}) a stage
     * loads: the embedding's too when the head is tied to it.
     */
    static List<Path> shardsFor(PartitionSpec spec, Path shardDir) {
        List<Path> files = new ArrayList<>();
        boolean tiedHead = spec.hasHead() && !headHasLmHead(shardDir);
        if (spec.hasEmbedding() || tiedHead) {
            files.add(shardDir.resolve(ModelGenerator.EMBED_FILE));
        }
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            files.add(shardDir.resolve(ModelGenerator.layerFile(i)));
        }
        if (spec.hasHead()) {
            files.add(shardDir.resolve(ModelGenerator.HEAD_FILE));
        }
        return files;
    }

    private static boolean headHasLmHead(Path shardDir) {
        try (SafetensorsFile f = SafetensorsFile.open(shardDir.resolve(ModelGenerator.HEAD_FILE))) {
            return f.tensors().containsKey("lm_head.weight");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Pipeline whole(io.butterfly.common.model.ModelConfig config, Path modelDir, ExecutorOptions options)
            throws IOException {
        return new Pipeline(List.of(DjlPartitionExecutor.load(PartitionSpec.whole(config),
                List.of(modelDir.resolve("model.safetensors")), options)));
    }

    List<DjlPartitionExecutor> stages() {
        return stages;
    }

    /** Runs one step through every stage; returns the last stage's result (logits). */
    StageResult step(List<SequenceChunk> batch, long[] ids) {
        StageInput input = new StageInput.Tokens(ids);
        StageResult result = null;
        for (DjlPartitionExecutor stage : stages) {
            result = stage.forward(batch, input);
            input = new StageInput.Hidden(wireCopy(result.littleEndianFloats()));
        }
        return result;
    }

    static ByteBuffer wireCopy(ByteBuffer b) {
        byte[] bytes = new byte[b.remaining()];
        b.duplicate().get(bytes);
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    static byte[] bytes(StageResult r) {
        byte[] bytes = new byte[r.littleEndianFloats().remaining()];
        r.littleEndianFloats().duplicate().get(bytes);
        return bytes;
    }

    static long argMax(float[] values, int from, int to) {
        int best = from;
        for (int i = from + 1; i < to; i++) {
            if (values[i] > values[best]) {
                best = i;
            }
        }
        return best - from;
    }

    @Override
    public void close() {
        stages.forEach(DjlPartitionExecutor::close);
    }
}
