package io.butterfly.coordinator.model;

import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.ModelConfig;

/** The model being served: its signed-off manifest, hyper-parameters and tokenizer. */
public record ServedModel(Manifest manifest, ModelConfig config, Tokenizer tokenizer) {
}
