package io.butterfly.worker.engine;

import io.butterfly.common.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.LongStream;

/**
 * Manual measurement, not a test: decode ms/token of the ~100M-parameter Llama with the executor (one
 * stage, and three stages in-process) and with {@link PlainDjlLoop}. Run with the test classpath:
 * {@code java ... io.butterfly.worker.engine.DecodeBenchmark [modelDir] [tokens] [tiny]}.
 */
public final class DecodeBenchmark {

    private DecodeBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : System.getProperty("java.io.tmpdir") + "/butterfly-bench-100m");
        int tokens = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        // "tiny" (the tests' 4-layer model) shows per-step overhead rather than weight bandwidth.
        ModelConfig config = args.length > 2 && args[2].equals("tiny") ? TestModels.llamaGqa() : TestModels.bench100m();
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            TestModels.write(config, TestModels.Options.plain(), 1, dir);
            TestModels.writeShards(dir, dir.resolve("shards"));
        }
        long[] prompt = LongStream.range(0, 16).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        System.out.printf("%,d parameters, prompt %d, decode %d tokens, torch threads %d%n", config.parameterCount(),
                prompt.length, tokens, threads());
        for (int round = 0; round < 2; round++) {
            try (Pipeline one = Pipeline.whole(config, dir)) {
                report("executor, 1 stage", decode(one, prompt, tokens));
            }
            try (Pipeline three = Pipeline.split(config, thirds(config.numLayers()), dir.resolve("shards"))) {
                report("executor, 3 stages in-process", decode(three, prompt, tokens));
            }
            try (PlainDjlLoop loop = PlainDjlLoop.load(dir, ExecutorOptions.cpu())) {
                loop.generate(prompt, 4);
                PlainDjlLoop.Run run = loop.generate(prompt, tokens + 1);
                report("plain DJL loop", new double[]{run.prefillMillis(), run.decodeMillis() / tokens});
            }
        }
    }

    private static int[] thirds(int layers) {
        return new int[]{0, layers / 3, 2 * layers / 3, layers};
    }

    private static int threads() {
        EngineSetup.start(0);
        return ai.djl.pytorch.jni.JniUtils.getNumThreads();
    }

    /** Returns {prefill ms, decode ms/token}. */
    private static double[] decode(Pipeline p, long[] prompt, int tokens) {
        // Warm-up sequence first.
        p.step(List.of(new SequenceChunk("warm", 0, prompt.length)), prompt);
        for (int i = 0; i < 3; i++) {
            p.step(List.of(new SequenceChunk("warm", prompt.length + i, 1)), new long[]{i});
        }
        p.stages().forEach(s -> s.release("warm"));
        long t0 = System.nanoTime();
        float[] logits = p.step(List.of(new SequenceChunk("s", 0, prompt.length)), prompt).toFloats();
        long t1 = System.nanoTime();
        for (int i = 0; i < tokens; i++) {
            long next = Pipeline.argMax(logits, 0, logits.length);
            logits = p.step(List.of(new SequenceChunk("s", prompt.length + i, 1)), new long[]{next}).toFloats();
        }
        long t2 = System.nanoTime();
        return new double[]{(t1 - t0) / 1e6, (t2 - t1) / 1e6 / tokens};
    }

    private static void report(String what, double[] r) {
        System.out.printf("%-32s prefill %7.1f ms   decode %6.2f ms/token  (%6.1f tokens/s)%n", what, r[0], r[1], 1000 / r[1]);
    }
}
