package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.reconcile.Reconciler;
import java.nio.file.Path;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Coordinator settings; the defaults run the embedded one-machine cluster.
 *
 * @param nodeId          this coordinator's id
 * @param advertiseHost   address workers use to reach this coordinator
 * @param clusterName     cluster name used with discovery
 * @param modelId         the model to serve (as the registry knows it)
 * @param expectedWorkers bootstrap waits for this many workers before planning; workers beyond them are spares
 * @param discoveryHost   discovery-service host
 * @param discoveryPort   discovery-service gRPC port
 * @param registryHost    model-registry-service host
 * @param registryPort    model-registry-service gRPC port
 * @param dataDir         where the coordinator keeps the tokenizer and config it fetched
 * @param maxNewTokens    upper bound for a request's max_tokens
 * @param maxPromptTokens upper bound for a prompt's length in tokens (and the model's positions less one)
 * @param maxPromptChars  upper bound for a text prompt's length in characters, checked before it is tokenized:
 *                        tokenizing megabytes takes seconds and a large enough text crashed the native tokenizer
 * @param stepTimeoutSeconds deadline of one pipeline step
 * @param taskTimeout     a task still open after this long is failed by the leader: its coordinator is gone
 *                        (one whose coordinator does not answer fails sooner, see engine.recovery-timeout)
 * @param trustedPublisherKeys hex Ed25519 keys whose signed manifests are accepted (none: every manifest is refused)
 * @param maxChatMessages the most messages a chat conversation may hold (413 past it, before the template renders;
 *                        the template engine's lists stop at 10 000)
 */
@ConfigurationProperties("butterfly.coordinator")
public record CoordinatorProperties(
        @DefaultValue("coordinator-0") String nodeId,
        @DefaultValue("127.0.0.1") String advertiseHost,
        @DefaultValue("butterfly") String clusterName,
        @DefaultValue("demo") String modelId,
        @DefaultValue("3") int expectedWorkers,
        @DefaultValue("127.0.0.1") String discoveryHost,
        @DefaultValue("9082") int discoveryPort,
        @DefaultValue("127.0.0.1") String registryHost,
        @DefaultValue("9081") int registryPort,
        @DefaultValue(".butterfly/coordinator-data") Path dataDir,
        @DefaultValue("1024") int maxNewTokens,
        @DefaultValue("4096") int maxPromptTokens,
        @DefaultValue("65536") int maxPromptChars,
        @DefaultValue("120") long stepTimeoutSeconds,
        @DefaultValue("30m") java.time.Duration taskTimeout,
        @DefaultValue List<String> trustedPublisherKeys,
        @DefaultValue("1024") int maxChatMessages) {

    public ModelCatalog.Settings catalog() {
        return new ModelCatalog.Settings(modelId, dataDir, trustedPublisherKeys);
    }

    public Reconciler.Settings reconciler(String protocolVersion, String plannerName) {
        return new Reconciler.Settings(modelId, expectedWorkers, clusterName, protocolVersion, plannerName);
    }

    /**
     * @param replicas        the coordinator replicas sharing the stages
     * @param recoveryTimeout how long a paused generation waits for the pipeline
     */
    public InferenceService.Settings inference(int replicas, java.time.Duration recoveryTimeout) {
        return new InferenceService.Settings(maxNewTokens, maxPromptTokens, maxPromptChars, replicas, recoveryTimeout);
    }
}
