package io.butterfly.cli.cluster;

import io.butterfly.cli.command.Commands;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code up}: starts a cluster and returns once it is READY; its services run on. */
@Command(name = "up", description = "start a cluster and return once it is READY (its services run on)")
public final class UpCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", paramLabel = "N", description = "worker processes, 1-99 (default 3)")
    String workers;

    @Option(names = "--model", paramLabel = "DIR|FILE", description = "a Hugging Face model directory or a GGUF file"
            + " (default: the generated demo model); its name is the model id (a directory's with -<quantization>"
            + " when quantized, a file's without .gguf)")
    Path model;

    @Option(names = "--quantize", paramLabel = "q8|q4|q4_k", description = "the registry quantizes the model"
            + " directory's matrices on import: q8 (Q8_0), q4 (Q4_0, head Q6_K) or q4_k (Q4_K_M); default: as they are")
    String quantize;

    @Option(names = "--coordinators", defaultValue = "1", paramLabel = "1-3", description = "coordinator replicas: 2-3"
            + " form a Raft group on HTTP 8080/8083/8084; only 3 tolerate a failed one (default 1)")
    String coordinators;

    @Option(names = "--planner", paramLabel = "capacity-weighted|optimal", description = "partition planner (default"
            + " capacity-weighted)")
    String planner;

    @Option(names = "--worker-memory", paramLabel = "300MB,1GB,...", description = "per-worker memory limit (the i-th"
            + " entry for worker-i; empty: the machine's), to show heterogeneous nodes")
    String workerMemory;

    @Option(names = "--spares", defaultValue = "0", paramLabel = "N", description = "standby workers beyond --workers,"
            + " 0-98 (default 0): the first plan leaves them out; one takes over the stage of a worker that fails or is"
            + " drained")
    String spares;

    @Option(names = "--pipelines", paramLabel = "N", description = "pipelines the workers form, each a whole copy of"
            + " the model that serves requests of its own (docs/scale-out.md): 1-99, or 0 for as many as the planner"
            + " finds best (default 1: one pipeline, the other workers spares)")
    String pipelines;

    @Option(names = "--transfer", defaultValue = "shared", paramLabel = "shared|stream", description = "workers copy"
            + " their shards from the registry's store and verify them (shared, default) or stream them over gRPC")
    String transfer;

    @Option(names = "--insecure", description = "TLS off: every gRPC port plaintext and unauthenticated (default: mutual"
            + " TLS, certificates from a cluster CA made under .butterfly/tls on first use)")
    boolean insecure;

    @Option(names = "--api-keys", paramLabel = "FILE", description = "API keys (one a line) that may generate:"
            + " /v1/** and inference need Authorization: Bearer <key> (default: a user key and an admin key made under"
            + " .butterfly/keys on first use)")
    Path apiKeys;

    @Option(names = "--no-auth", description = "no API keys: every endpoint of the coordinators and the registry open"
            + " to whoever reaches their ports (default: keys made under .butterfly/keys)")
    boolean noAuth;

    @Option(names = "--admin-api-keys", paramLabel = "FILE", description = "API keys (one a line) that may also"
            + " change the cluster and import models into the registry")
    Path adminApiKeys;

    @Override
    public Integer call() {
        UpOptions options = UpOptions.defaults().withWorkers(workers(spec, workers)).withModel(model)
                .withCoordinators(coordinators(spec, coordinators)).withPlanner(planner(spec, planner))
                .withTransfer(transfer(spec, transfer)).withSpares(spares(spec, spares)).withInsecure(insecure)
                .withApiKeys(apiKeyFiles(spec, noAuth, apiKeys, adminApiKeys))
                .withQuantize(quantize(spec, quantize));
        if (options.workerProcesses() > 99) {
            throw Commands.usageError(spec, "--workers and --spares together must be at most 99 worker processes");
        }
        if (workerMemory != null) {
            options = options.withWorkerMemory(Arrays.asList(workerMemory.split(",", -1)));
        }
        if (pipelines != null) {
            options = withPipelines(options, pipelines(spec, pipelines, options.workers()));
        }
        Launcher.fromEnvironment().up(options, spec.commandLine().getOut());
        return 0;
    }

    /** The keys asked: none ({@code --no-auth}), the operator's files, or by default those {@code up} makes. */
    static UpOptions.ApiKeyFiles apiKeyFiles(CommandSpec spec, boolean noAuth, Path keys, Path adminKeys) {
        if (noAuth && (keys != null || adminKeys != null)) {
            throw Commands.usageError(spec, "--no-auth takes no --api-keys or --admin-api-keys");
        }
        if (noAuth) {
            return UpOptions.ApiKeyFiles.NONE;
        }
        if (keys == null && adminKeys == null) {
            return UpOptions.ApiKeyFiles.MADE;
        }
        return new UpOptions.ApiKeyFiles(keyFile(spec, "--api-keys", keys), keyFile(spec, "--admin-api-keys", adminKeys));
    }

    /** The file as an absolute path (the services run elsewhere), or null; a file that is not there is refused. */
    static Path keyFile(CommandSpec spec, String option, Path file) {
        if (file == null) {
            return null;
        }
        if (!Files.isRegularFile(file)) {
            throw Commands.usageError(spec, option + " " + file + " is not a file");
        }
        return file.toAbsolutePath().normalize();
    }

    /** The quantization's id, or null for none; anything else is refused. */
    static String quantize(CommandSpec spec, String value) {
        if (value == null) {
            return null;
        }
        return io.butterfly.common.quant.WeightQuantization.byId(value).map(q -> q.id())
                .orElseThrow(() -> Commands.usageError(spec, "--quantize must be q8, q4 or q4_k"));
    }

    public static int workers(CommandSpec spec, String value) {
        if (!value.matches("[1-9][0-9]?")) {
            throw Commands.usageError(spec, "--workers must be a number from 1 to 99");
        }
        return Integer.parseInt(value);
    }

    public static int spares(CommandSpec spec, String value) {
        if (!value.matches("[0-9]{1,2}") || Integer.parseInt(value) > 98) {
            throw Commands.usageError(spec, "--spares must be a number from 0 to 98");
        }
        return Integer.parseInt(value);
    }

    /** The number of pipelines asked: 0 (the planner chooses) up to one per worker. */
    public static int pipelines(CommandSpec spec, String value, int workers) {
        if (!value.matches("[0-9]{1,2}") || Integer.parseInt(value) > workers) {
            throw Commands.usageError(spec, "--pipelines must be a number from 0 to --workers (" + workers + ")");
        }
        return Integer.parseInt(value);
    }

    /** The coordinators plan {@code n} pipelines over the workers, the standby ones (--spares) kept out. */
    public static UpOptions withPipelines(UpOptions options, int n) {
        List<String> args = new java.util.ArrayList<>(options.coordinatorArgs());
        args.add("--butterfly.coordinator.planning.pipelines=" + n);
        args.add("--butterfly.coordinator.planning.spares=" + options.spares());
        return options.withCoordinatorArgs(args);
    }

    public static int coordinators(CommandSpec spec, String value) {
        if (!value.matches("[1-3]")) {
            throw Commands.usageError(spec, "--coordinators must be 1, 2 or 3");
        }
        return Integer.parseInt(value);
    }

    public static String planner(CommandSpec spec, String value) {
        if (value != null && !List.of("capacity-weighted", "optimal").contains(value)) {
            throw Commands.usageError(spec, "--planner must be capacity-weighted or optimal, not '" + value + "'");
        }
        return value;
    }

    public static UpOptions.Transfer transfer(CommandSpec spec, String value) {
        if (!List.of("shared", "stream").contains(value)) {
            throw Commands.usageError(spec, "--transfer must be shared or stream, not '" + value + "'");
        }
        return UpOptions.Transfer.valueOf(value.toUpperCase(Locale.ROOT));
    }
}
