package io.butterfly.cli.cluster;

import java.nio.file.Path;
import java.util.List;

/**
 * What {@code up} starts.
 *
 * @param workers          worker processes (1-99)
 * @param model            the model directory, or null for the generated demo model
 * @param planner          the partition planner, or null for the coordinator's default
 * @param workerMemory     per-worker memory limits (the i-th for worker-i; missing or empty: the machine's)
 * @param coordinators     coordinator replicas, one Raft group (1-3)
 * @param transfer         how workers get their shards
 * @param coordinatorArgs  further arguments for every coordinator replica ({@code --butterfly.coordinator....=...})
 * @param pinWorkers       whether each worker runs pinned to one core, worker-i to core i mod the cores
 * @param spares           further workers started after the first {@code workers} (worker-N, ...): the first plan
 *                         leaves them out, and they stand by to take a lost or drained stage
 * @param insecure         whether TLS is off: every gRPC port plaintext and unauthenticated ({@code --insecure})
 * @param apiKeys          the API key files the coordinators and the registry check (docs/security.md)
 * @param quantize         how the registry quantizes the model directory on import ({@code q8}, {@code q4},
 *                         {@code q4_k}), or null for as it is (a GGUF file is always served as it is)
 * @param workerArgs       added to every worker's command line; an entry {@code worker-I:--arg} to worker-I's only
 */
public record UpOptions(int workers, Path model, String planner, List<String> workerMemory, int coordinators,
                        Transfer transfer, List<String> coordinatorArgs, boolean pinWorkers, int spares,
                        boolean insecure, ApiKeyFiles apiKeys, String quantize, List<String> workerArgs) {

    /**
     * @param keys      keys that may generate (null: none)
     * @param adminKeys keys that may also change the cluster and import models (null: none)
     * @param made      the keys {@code up} makes under {@code .butterfly/keys} (the default; the files are null then)
     */
    public record ApiKeyFiles(Path keys, Path adminKeys, boolean made) {
        /** No keys: every endpoint open ({@code --no-auth}). */
        public static final ApiKeyFiles NONE = new ApiKeyFiles(null, null, false);
        /** A user key and an admin key made on first use under {@code .butterfly/keys} (the default). */
        public static final ApiKeyFiles MADE = new ApiKeyFiles(null, null, true);

        /** The operator's own key files (either may be null). */
        public ApiKeyFiles(Path keys, Path adminKeys) {
            this(keys, adminKeys, false);
        }

        public boolean none() {
            return !made && keys == null && adminKeys == null;
        }
    }

    /**
     * Shared: workers copy their shards from the registry's store (on this machine they see it) and check each
     * against the signed manifest. Stream: they stream them over loopback gRPC, as across machines.
     */
    public enum Transfer { SHARED, STREAM }

    public UpOptions {
        workerMemory = List.copyOf(workerMemory);
        coordinatorArgs = List.copyOf(coordinatorArgs);
        workerArgs = List.copyOf(workerArgs);
    }

    /** These options with {@code args} added to every worker's command line (e.g. a worker setting). */
    public UpOptions withWorkerArgs(List<String> args) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers,
                spares, insecure, apiKeys, quantize, args);
    }

    /** The arguments {@link #workerArgs} gives worker {@code i}: its own ({@code worker-i:...}) and everyone's. */
    public List<String> workerArgs(int i) {
        String own = "worker-" + i + ":";
        return workerArgs.stream().filter(a -> a.startsWith(own) || !a.matches("worker-\\d+:.*"))
                .map(a -> a.startsWith(own) ? a.substring(own.length()) : a).toList();
    }

    /**
     * The defaults: 3 workers and no spare, the demo model, one coordinator, nothing pinned, mutual TLS, API keys made
     * under {@code .butterfly/keys}.
     */
    public static UpOptions defaults() {
        return new UpOptions(3, null, null, List.of(), 1, Transfer.SHARED, List.of(), false, 0, false, ApiKeyFiles.MADE, null,
                List.of());
    }

    public UpOptions withWorkers(int n) {
        return new UpOptions(n, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withQuantize(String q) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers,
                spares, insecure, apiKeys, q, workerArgs);
    }

    public UpOptions withModel(Path m) {
        return new UpOptions(workers, m, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withCoordinators(int n) {
        return new UpOptions(workers, model, planner, workerMemory, n, transfer, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withPlanner(String p) {
        return new UpOptions(workers, model, p, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withWorkerMemory(List<String> limits) {
        return new UpOptions(workers, model, planner, limits, coordinators, transfer, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withTransfer(Transfer t) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, t, coordinatorArgs, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withCoordinatorArgs(List<String> args) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, args, pinWorkers, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withSpares(int n) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers, n,
                insecure, apiKeys, quantize, workerArgs);
    }

    /** Every worker process: the planned ones, then the spares. */
    public int workerProcesses() {
        return workers + spares;
    }

    public UpOptions withPinnedWorkers(boolean pinned) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinned, spares,
                insecure, apiKeys, quantize, workerArgs);
    }

    public UpOptions withInsecure(boolean plaintext) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers,
                spares, plaintext, apiKeys, quantize, workerArgs);
    }

    public UpOptions withApiKeys(ApiKeyFiles files) {
        return new UpOptions(workers, model, planner, workerMemory, coordinators, transfer, coordinatorArgs, pinWorkers,
                spares, insecure, files, quantize, workerArgs);
    }
}
