package io.butterfly.cli.reference;

import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.LongStream;

/**
 * Manual measurement, not a test: decode ms/token of a generated model (default: the ~100M-parameter bench-100m
 * preset) with the worker's executor (one stage, and three stages in this process) and with {@link PlainDjlLoop}.
 * Run with the test classpath: {@code java ... io.butterfly.cli.reference.DecodeBenchmark [modelDir] [tokens]
 * [demo]} ("demo", the small preset, shows per-step overhead rather than weight bandwidth).
 */
public final class DecodeBenchmark {

    private DecodeBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : System.getProperty("java.io.tmpdir") + "/butterfly-bench-100m");
        int tokens = args.length > 1 ? Integer.parseInt(args[1]) : 64;
        String preset = args.length > 2 ? args[2] : "bench-100m";
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            GenerateModelCommand.generatePreset(preset, dir, new PrintWriter(System.out, true), new PrintWriter(System.err, true));
        }
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        long[] prompt = LongStream.range(0, 16).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        System.out.printf("%,d parameters, prompt %d, decode %d tokens%n", config.parameterCount(), prompt.length, tokens);
        for (int round = 0; round < 2; round++) {
            try (Stages one = Stages.load(config, dir, 1)) {
                report("executor, 1 stage", decode(one, prompt, tokens));
            }
            try (Stages three = Stages.load(config, dir, 3)) {
                report("executor, 3 stages in-process", decode(three, prompt, tokens));
            }
            try (PlainDjlLoop loop = PlainDjlLoop.load(dir, ExecutorOptions.cpu())) {
                loop.generate(prompt, 4);
                PlainDjlLoop.Run run = loop.generate(prompt, tokens + 1);
                report("plain DJL loop", new double[]{run.prefillMillis(), run.decodeMillis() / tokens});
            }
        }
    }

    /** Returns {prefill ms, decode ms/token}, after a warm-up sequence. */
    private static double[] decode(Stages p, long[] prompt, int tokens) {
        p.step(new SequenceChunk("warm", 0, prompt.length), prompt);
        for (int i = 0; i < 3; i++) {
            p.step(new SequenceChunk("warm", prompt.length + i, 1), new long[]{i});
        }
        p.release("warm");
        long t0 = System.nanoTime();
        float[] logits = p.step(new SequenceChunk("s", 0, prompt.length), prompt).toFloats();
        long t1 = System.nanoTime();
        for (int i = 0; i < tokens; i++) {
            float[] l = logits;
            long next = IntStream.range(0, l.length).reduce((a, b) -> l[b] > l[a] ? b : a).orElseThrow();
            logits = p.step(new SequenceChunk("s", prompt.length + i, 1), new long[]{next}).toFloats();
        }
        long t2 = System.nanoTime();
        return new double[]{(t1 - t0) / 1e6, (t2 - t1) / 1e6 / tokens};
    }

    private static void report(String what, double[] r) {
        System.out.printf("%-32s prefill %7.1f ms   decode %6.2f ms/token  (%6.1f tokens/s)%n", what, r[0], r[1], 1000 / r[1]);
    }

    /** Executors for equal layer ranges, hidden states handed on as the wire carries them (little-endian float32). */
    private record Stages(List<DjlPartitionExecutor> executors) implements AutoCloseable {

        static Stages load(ModelConfig config, Path dir, int count) throws Exception {
            List<DjlPartitionExecutor> executors = new ArrayList<>();
            int layers = config.numLayers();
            for (int i = 0; i < count; i++) {
                PartitionSpec spec = new PartitionSpec(config, i * layers / count, (i + 1) * layers / count, i == 0,
                        i == count - 1);
                executors.add(DjlPartitionExecutor.load(spec, List.of(dir.resolve("model.safetensors")), ExecutorOptions.cpu()));
            }
            return new Stages(executors);
        }

        StageResult step(SequenceChunk chunk, long[] ids) {
            StageInput input = new StageInput.Tokens(ids);
            StageResult result = null;
            for (DjlPartitionExecutor stage : executors) {
                result = stage.forward(List.of(chunk), input);
                ByteBuffer b = result.littleEndianFloats();
                byte[] bytes = new byte[b.remaining()];
                b.duplicate().get(bytes);
                input = new StageInput.Hidden(ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN));
            }
            return result;
        }

        void release(String sequence) {
            executors.forEach(e -> e.release(sequence));
        }

        @Override
        public void close() {
            executors.forEach(DjlPartitionExecutor::close);
        }
    }
}
