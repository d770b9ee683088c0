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
 * {@code bench-moe}: decode tokens/s of a mixture of experts on one worker holding everything and on N workers with
 * the routed experts spread over them in N expert groups (one stage, {@code planning.expert-groups=N}), measured in
 * interleaved rounds; and the weight bytes each decode token reads, of which only the experts its router chose
 * ({@link ExpertTokenBytes}). The last line is {@code moe_ratio=X.XX}: the median over the rounds of N workers / one.
 */
@Command(name = "bench-moe", description = "mixture of experts: decode tokens/s and bytes per token, 1 worker vs N"
        + " with the experts spread")
public final class MoeBenchCommand implements Callable<Integer> {

    private static final int PROMPT_TOKENS = 16;

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", paramLabel = "N", description = "workers the experts are spread over (default 3)")
    int workers = 3;

    @Option(names = "--arch", paramLabel = "mixtral|qwen2-moe|qwen3-moe", description = "the generated model's"
            + " architecture (default mixtral; 8 layers, hidden 512, 8 experts of width 1024, 2 per token)")
    String arch = "mixtral";

    @Option(names = "--model", paramLabel = "DIR", description = "a mixture of experts to serve instead of the"
            + " generated one")
    Path model;

    @Option(names = "--tokens", paramLabel = "N", description = "tokens decoded per measurement (default 64)")
    int tokens = 64;

    @Option(names = "--rounds", paramLabel = "R", description = "measured rounds (default 5)")
    int rounds = 5;

    @Option(names = "--warmup-seconds", paramLabel = "S", description = "unmeasured rounds first, at least this long"
            + " (default 60)")
    int warmupSeconds = 60;

    @Override
    public Integer call() throws Exception {
        if (workers < 2 || rounds < 1 || tokens < 1 || warmupSeconds < 0) {
            throw new CommandFailedException("--workers must be at least 2, --rounds and --tokens at least 1");
        }
        PrintWriter out = spec.commandLine().getOut();
        ButterflyHome home = ButterflyHome.fromEnvironment();
        Path dir = model != null ? model.toAbsolutePath() : generated(home, out);
        ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
        if (config.experts() == null) {
            throw new CommandFailedException(dir + " is not a mixture of experts (mixtral, qwen2-moe, qwen3-moe)");
        }
        var moe = config.experts();
        ExpertTokenBytes bytes = ExpertTokenBytes.of(dir, config);
        long[] prompt = LongStream.range(0, PROMPT_TOKENS).map(i -> (i * 7919 + 13) % config.vocabSize()).toArray();
        out.printf("model %s: %s, %d layers, hidden %d, %d experts of width %d, %d per token, %,d parameters;"
                        + " prompt %d tokens, decode %d tokens; >= %d s of warm-up, median of %d interleaved rounds%n",
                dir.getFileName(), moe.kind().modelType(), config.numLayers(), config.hiddenSize(), moe.experts(),
                moe.expertSize(), moe.perToken(), config.parameterCount(), PROMPT_TOKENS, tokens, warmupSeconds, rounds);

        try (PairedClusters clusters = new PairedClusters(home, "bench-moe", 650,
                "one-worker", UpOptions.defaults().withWorkers(1),
                workers + "-workers", UpOptions.defaults().withWorkers(workers)
                        .withCoordinatorArgs(List.of("--butterfly.coordinator.planning.expert-groups=" + workers)))) {
            clusters.start(dir, out);
            out.printf("%d workers' stages' expert groups: %s%n", workers, clusters.comparedGroups());
            PairedClusters.Rounds measured = clusters.measure(BenchCommand.requestBody(prompt, tokens), warmupSeconds,
                    this.rounds, out, (r, one, spread) -> out.printf("round %d: 1 worker %.2f, %d workers (experts"
                            + " spread) %.2f tokens/s%n", r, one, workers, spread));
            double[] single = measured.baseline();
            double[] split = measured.compared();
            double[] ratio = new double[this.rounds];
            for (int r = 0; r < ratio.length; r++) {
                ratio[r] = split[r] / single[r];
            }
            double s = Stats.median(single);
            double m = Stats.median(split);
            int context = PROMPT_TOKENS + tokens / 2; // the mean cached positions of a decode step
            long kv = 2L * config.numLayers() * config.kvDim() * context * Float.BYTES;
            out.printf("weights held: %.1f MB (routed experts %.1f MB); a decode token reads %.2f MB of weights"
                            + " (dense %.2f MB, its %d chosen experts per layer %.2f MB) and %.2f MB of KV cache"
                            + " (%d cached positions on average)%n", (bytes.dense() + bytes.experts()) / 1e6,
                    bytes.experts() / 1e6, bytes.perToken() / 1e6, bytes.dense() / 1e6, moe.perToken(),
                    bytes.chosen() / 1e6, kv / 1e6, context);
            StringBuilder shares = new StringBuilder();
            for (int g = 0; g < workers; g++) {
                int size = moe.experts() / workers + (g < moe.experts() % workers ? 1 : 0);
                shares.append(String.format("%s worker-%d %.2f MB", g == 0 ? "" : ",", g,
                        bytes.groupShare(size, moe.experts(), g == 0) / 1e6));
            }
            out.printf("per worker with %d groups (router choosing uniformly; worker-0 also attention and head):%s%n",
                    workers, shares);
            out.printf("cluster, 1 worker:                  %8.2f tokens/s  (%.1f MB/s of weights read)%n",
                    s, s * bytes.perToken() / 1e6);
            out.printf("cluster, %d workers, experts spread: %8.2f tokens/s  (%.2fx one worker)%n", workers, m, m / s);
            out.printf("bytes_per_token=%d%n", bytes.perToken() + kv);
            out.printf("moe_ratio=%.2f%n", Stats.median(ratio));
        }
        return 0;
    }

    /** The generated model of {@code --arch}, generated the first time under the state directory's models. */
    private Path generated(ButterflyHome home, PrintWriter out) {
        if (!List.of("mixtral", "qwen2-moe", "qwen3-moe").contains(arch)) {
            throw new CommandFailedException("--arch " + arch + " is not one of mixtral, qwen2-moe, qwen3-moe");
        }
        Path dir = home.model("bench-moe-" + arch).toAbsolutePath();
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            out.println("generating the benchmark mixture of experts in " + dir);
            List<String> args = new java.util.ArrayList<>(List.of("--arch", arch, "--layers", "8", "--hidden", "512",
                    "--heads", "8", "--kv-heads", "4", "--vocab", "8000", "--experts", "8", "--experts-per-token", "2",
                    "--out", dir.toString()));
            args.addAll(arch.equals("mixtral") ? List.of("--intermediate", "1024")
                    : List.of("--intermediate", "2048", "--expert-intermediate", "1024"));
            if (GenerateModelCommand.run(args.toArray(String[]::new), out, spec.commandLine().getErr()) != 0) {
                throw new CommandFailedException("could not generate the benchmark model in " + dir);
            }
        }
        return dir;
    }
}
