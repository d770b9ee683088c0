package io.butterfly.coordinator.inference;

import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.bootstrap.WorkerChannels;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.proto.registry.v1.ModelManifest;
import java.time.Clock;

/** An inference service over a {@link ReadyCluster} control log whose pipeline steps are whatever {@code steps} answers. */
public final class ScriptedInference {

    private ScriptedInference() {
    }

    public static InferenceService service(ControlLog control, ModelConfig config, HuggingFaceTokenizer tokenizer,
                                           PipelineSteps steps, int maxConcurrentTasks) {
        CoordinatorProperties p = ReadyCluster.props("coordinator-0");
        CoordinatorProperties props = new CoordinatorProperties(p.nodeId(), p.advertiseHost(), p.clusterName(),
                p.modelId(), p.expectedWorkers(), p.discoveryHost(), p.discoveryPort(), p.registryHost(), p.registryPort(),
                p.dataDir(), p.maxNewTokens(), p.maxPromptTokens(), p.maxPromptChars(), p.stepTimeoutSeconds(),
                p.taskTimeout(), p.trustedPublisherKeys(), maxConcurrentTasks);
        ModelCatalog catalog = mock(ModelCatalog.class);
        when(catalog.servedFor("root")).thenReturn(new ServedModel(ModelManifest.newBuilder().setModelId("tiny")
                .setMerkleRoot("root").build(), config, tokenizer));
        return new InferenceService(props, control, catalog, new WorkerChannels(9999), steps, Clock.systemUTC());
    }
}
