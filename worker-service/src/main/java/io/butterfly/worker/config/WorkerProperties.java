package io.butterfly.worker.config;

import io.butterfly.worker.engine.Activations;
import io.butterfly.worker.engine.CpuKernels;
import io.butterfly.worker.engine.WeightDtype;
import java.nio.file.Path;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Worker settings; the defaults run one worker on one machine.
 *
 * @param nodeId          stable id in the cluster
 * @param advertiseHost   address other nodes use to reach this worker
 * @param dataDir         downloaded shards live under here
 * @param device          "cpu", "gpu:N" or "auto"
 * @param threads         intra-op threads for the engine (0 = engine default)
 * @param clusterName     cluster to join
 * @param discoveryHost   discovery-service host
 * @param discoveryPort   discovery-service gRPC port
 * @param heartbeatMillis period of heartbeats to the coordinator (docs/state-machines.md §2.2: every 100 ms)
 * @param coordinatorHost coordinator host, used with {@code coordinatorPort}
 * @param coordinatorPort coordinator gRPC port to heartbeat to from start-up; 0 = only once an assignment
 *                        names the coordinator (a restarted worker needs it to be seen coming back)
 * @param coordinatorReplicas the other coordinator replicas ({@code host:port}) to heartbeat to from start-up, beside
 *                        {@code coordinatorPort}'s: a worker that holds no stage gets no assignment that would name
 *                        them, and its heartbeats must reach whichever replica leads (else a spare, or a worker planned
 *                        away after a false FAILED, is FAILED at every leader but the replica it was started with)
 * @param trustedPublisherKeys hex Ed25519 keys whose signed manifests are accepted (none: every manifest is refused)
 * @param discoveryHeartbeatMillis period of signed heartbeats to discovery (keeps the membership entry fresh; a
 *                        NOT_FOUND answer means discovery restarted, and the worker joins again)
 * @param memoryLimit     memory this worker offers for its partition (0 = the machine's physical memory); lets
 *                        workers sharing one machine declare their share, or show heterogeneous nodes
 * @param cacheIdleTimeout a sequence's KV cache that ran no step for this long is freed: its coordinator gave up on
 *                        it long ago (steps time out after 2 minutes) and no release will come
 * @param kvCacheBudget   the most memory the KV caches of all sequences on this worker may take together (0B = no
 *                        limit); a step that would need more is refused (RESOURCE_EXHAUSTED, REST 429) instead of
 *                        exhausting the worker's memory, and succeeds once other sequences are released
 * @param batchInvariant  a sequence's logits are bit for bit the same whatever it is batched with, also on the
 *                        fallback projections (MKL's GEMM, half precision: every step's rows padded to a multiple of 4;
 *                        off, they agree there within float32 rounding, and a step of 1 to 3 rows runs up to twice as
 *                        fast); the native kernels (the default on a CPU) and oneDNN's projections are invariant without it
 * @param weightDtype     the precision projection weights are held in: F32 (default), or F16 / BF16 (half the memory
 *                        and the bytes a step reads; a projection's input is rounded to that type, see
 *                        docs/benchmarks.md for what it costs and buys on a CPU)
 * @param kernels         what a Llama-family stage on a CPU computes with: AUTO (default: the native kernels for quantized
 *                        and float32 weights where they compute the model, libtorch's for half-precision weights,
 *                        experts and q/k norms), NATIVE (the native kernels for every stage) or TORCH (libtorch's for
 *                        every stage: oneDNN's float32 projections, quantized weights dequantized to float32 at load)
 * @param activations     what quantized projections on the native kernels multiply: INT8 (default: inputs rounded to
 *                        8 bits a block of 32 at a time, integer dot products, as llama.cpp) or F32 (weight-only, the
 *                        float32 reference's logits to a few ulps); every worker of a cluster must have the same
 * @param prefixCaching   whether the stage keeps the KV of prompts' full blocks for later prompts that start alike
 *                        (automatic prefix caching, docs/serving.md#prefix-caching; on by default)
 */
@ConfigurationProperties("butterfly.worker")
public record WorkerProperties(
        @DefaultValue("worker-0") String nodeId,
        @DefaultValue("127.0.0.1") String advertiseHost,
        @DefaultValue(".butterfly/worker-data") Path dataDir,
        @DefaultValue("cpu") String device,
        @DefaultValue("0") int threads,
        @DefaultValue("butterfly") String clusterName,
        @DefaultValue("127.0.0.1") String discoveryHost,
        @DefaultValue("9082") int discoveryPort,
        @DefaultValue("100") long heartbeatMillis,
        @DefaultValue("127.0.0.1") String coordinatorHost,
        @DefaultValue("0") int coordinatorPort,
        @DefaultValue List<String> coordinatorReplicas,
        @DefaultValue List<String> trustedPublisherKeys,
        @DefaultValue("5000") long discoveryHeartbeatMillis,
        @DefaultValue("0B") DataSize memoryLimit,
        @DefaultValue("10m") java.time.Duration cacheIdleTimeout,
        @DefaultValue("2GB") DataSize kvCacheBudget,
        @DefaultValue("false") boolean batchInvariant,
        @DefaultValue("F32") WeightDtype weightDtype,
        @DefaultValue("AUTO") CpuKernels kernels,
        @DefaultValue("INT8") Activations activations,
        @DefaultValue("true") boolean prefixCaching) {

    public WorkerProperties {
        if (kvCacheBudget.isNegative()) {
            throw new IllegalArgumentException("butterfly.worker.kv-cache-budget must not be negative, got " + kvCacheBudget);
        }
    }
}
