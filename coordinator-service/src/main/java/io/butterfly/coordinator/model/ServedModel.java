package io.butterfly.coordinator.model;

import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.ModelConfig;

/**
 * The model being served: its signed-off manifest, hyper-parameters, tokenizer and chat template.
 *
 * @param chatTemplate null when the model has none (tokenizer_config.json without {@code chat_template}, no
 *                     chat_template.jinja): chat completions are then refused
 */
public record ServedModel(Manifest manifest, ModelConfig config, Tokenizer tokenizer, ChatTemplate chatTemplate) {

    /** A model without a chat template. */
    public ServedModel(Manifest manifest, ModelConfig config, Tokenizer tokenizer) {
        this(manifest, config, tokenizer, null);
    }
}
