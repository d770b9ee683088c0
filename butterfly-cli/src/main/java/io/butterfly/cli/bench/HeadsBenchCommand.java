package io.butterfly.cli.bench;

import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.common.model.ModelConfig;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.LongStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code bench-heads}: the decode time a token takes on one worker computing whole layers (k = 1) and on two workers
 * splitting each layer by attention heads (k = 2, one stage, {@code planning.head-shards=2}; docs/sharding.md, "Head
 * parallelism"), measured in interleaved rounds; with {@code --pin} each worker pinned to a core of its own. The last
 * line is {@code head_parallel_ratio=X.XX}: the median over the rounds of k = 1's time a token over k = 2's (above 1:
 * two workers make a token faster).
 */
@Command(name = "bench-heads", description = "head parallelism: decode time a token on 1 worker vs 2 head shards,"
        + " head_parallel_ratio last")
public final class HeadsBenchCommand implements Callable<Integer> {

    private static final int PROMPT_TOKENS = 16;

    @Spec
    CommandSpec spec;

    @Option(names = "--pin", description = "pin each worker to a core of its own (taskset): worker-i to core i")
    boolean pin;

    @Option(names = "--model", paramLabel = "DIR", description = "a dense Llama-family float32 model to serve instead"
            + " of a generated one")
    Path model;

    @Option(names = "--shape", paramLabel = "S", description = "the generated model: small (default: 4 layers, hidden"
            + " 1024, 16 query over 8 key/value heads, MLP 2816) or wide (4 layers of TinyLlama-1.1B's shape: hidden"
            + " 2048, 32 query over 4 key/value heads, MLP 5632)")
    String shape = "small";

    /** The generated models: a layer's compute per token grows with the width, the exchanges' cost does not. */
    enum Shape {
        SMALL("bench-heads-llama", "1024", "16", "8", "2816"),
        WIDE("bench-heads-wide", "2048", "32", "4", "5632");

        final String dir;
        final String[] args;

        static Shape named(String name) {
            for (Shape s : values()) {
                if (s.name().equalsIgnoreCase(name)) {
                    return s;
                }
            }
            throw new CommandFailedException("--shape is small or wide, not " + name);
        }

        Shape(String dir, String hidden, String heads, String kvHeads, String mlp) {
            this.dir = dir;
            this.args = new String[]{"--arch", "llama", "--layers", "4", "--hidden", hidden, "--heads", heads,
                    "--kv-heads", kvHeads, "--intermediate", mlp, "--vocab", "8000"};
        }
    }

    @Option(names = "--tokens", paramLabel = "N", description = "tokens decoded per measurement (default 32)")
    int tokens = 32;

    @Option(names = "--rounds", paramLabel = "R", description = "measured rounds (default 5)")
    int rounds = 5;

    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured rounds first, at least this long"
            + " (default 90: with one core a JVM, the JIT still compiled the transport's code after 30 s)")
    int warmupSeconds = 90;

    @Override
    public Integer call() throws Exception {
        if (rounds < 1 || tokens < 1 || warmupSeconds < 0) {
            throw new CommandFailedException("--rounds and --tokens must be at least 1, --warmup-seconds at least 0");
        }
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = model != null ? model.toAbsolutePath() : generated(home, out);
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        if (config.experts() != null || config.numKvHeads() < 2) {
            throw new CommandFailedException(dir + " is not a dense Llama-family model of at least 2 key/value heads");
        }
        long[] prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        out.printf("model %s: %d layers, hidden %d, %d query over %d key/value heads, MLP %d, %,d parameters; prompt %d"
                        + " tokens, decode %d tokens; >= %d s of warm-up, median of %d interleaved rounds; %s%n",
                dir.getFileName(), config.numLayers(), config.hiddenSize(), config.numHeads(), config.numKvHeads(),
                config.intermediateSize(), config.parameterCount(), PROMPT_TOKENS, tokens, warmupSeconds, rounds,
                pin ? "worker-i pinned to core i" : "not pinned");

        try (PairedClusters clusters = new PairedClusters(home, "bench-heads", 1250,
                "k1", UpOptions.defaults().withWorkers(1).withPinnedWorkers(pin),
                "k2", UpOptions.defaults().withWorkers(2).withPinnedWorkers(pin)
                        .withCoordinatorArgs(List.of("--butterfly.coordinator.planning.head-shards=2")))) {
            clusters.start(dir, out);
            out.printf("k = 2 stages' head shards: %s%n", clusters.comparedGroups());
            PairedClusters.Rounds measured = clusters.measure(BenchCommand.requestBody(prompt, tokens), warmupSeconds,
                    this.rounds, out, (r, k1, k2) -> out.printf("round %d: k = 1 %.2f ms a token, k = 2 %.2f ms a token%n",
                            r, 1000 / k1, 1000 / k2));
            double[] ratio = new double[this.rounds];
            for (int r = 0; r < ratio.length; r++) {
                ratio[r] = measured.compared()[r] / measured.baseline()[r]; // k = 1's time a token over k = 2's
            }
            out.printf("k=1 (1 worker, whole layers):  %8.2f ms a token%n", 1000 / Stats.median(measured.baseline()));
            out.printf("k=2 (2 workers, head shards):  %8.2f ms a token%n", 1000 / Stats.median(measured.compared()));
            out.printf("head_parallel_ratio=%.2f%n", Stats.median(ratio));
        }
        return 0;
    }

    /** The generated model, generated the first time under the state directory's models. */
    private Path generated(ButterflyHome home, PrintWriter out) {
        Shape generated = Shape.named(shape);
        Path dir = home.model(generated.dir).toAbsolutePath();
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            out.println("generating the benchmark model in " + dir);
            String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(generated.args),
                    java.util.stream.Stream.of("--out", dir.toString())).toArray(String[]::new);
            if (GenerateModelCommand.run(args, out, spec.commandLine().getErr()) != 0) {
                throw new CommandFailedException("could not generate the benchmark model in " + dir);
            }
        }
        return dir;
    }
}
