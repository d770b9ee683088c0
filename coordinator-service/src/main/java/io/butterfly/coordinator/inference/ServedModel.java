package io.butterfly.coordinator.inference;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.manifest.Manifest;

/** The model being served: its signed-off manifest, hyper-parameters and tokenizer. */
public record ServedModel(Manifest manifest, ModelConfig config, HuggingFaceTokenizer tokenizer) {
}
