package io.butterfly.cli.reference;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The whole model in this one process, decoding greedily: what a split cluster's greedy answer must equal
 * (the demo shows it; the tests check the logits bit for bit).
 */
public final class WholeModelCheck {

    private WholeModelCheck() {
    }

    /** The {@code tokens} token ids greedy decoding generates after {@code prompt}, on {@code threads} engine threads. */
    public static long[] greedy(Path modelDir, long[] prompt, int tokens, int threads) throws IOException {
        ModelConfig config = ModelConfig.read(modelDir.resolve("config.json"));
        List<Path> weights;
        try (Stream<Path> files = Files.list(modelDir)) {
            weights = files.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList();
        }
        long[] out = new long[tokens];
        try (DjlPartitionExecutor whole = DjlPartitionExecutor.load(PartitionSpec.whole(config), weights,
                new ExecutorOptions("cpu", threads, 0))) {
            int reach = prompt.length + tokens;
            StageResult r = whole.forward(List.of(new SequenceChunk("whole", 0, prompt.length, reach)),
                    new StageInput.Tokens(prompt));
            for (int i = 0; i < tokens; i++) {
                out[i] = PlainDjlLoop.argMax(r.toFloats());
                if (i + 1 < tokens) {
                    r = whole.forward(List.of(new SequenceChunk("whole", prompt.length + i, 1, reach)),
                            new StageInput.Tokens(new long[]{out[i]}));
                }
            }
        }
        return out;
    }
}
