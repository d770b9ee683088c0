package io.butterfly.coordinator.model;

import java.util.List;

/**
 * The served model's chat template: a conversation to the prompt text the model was trained on, rendered as
 * transformers' {@code apply_chat_template(messages, add_generation_prompt=True)} renders it (jinja/ holds the
 * implementation). The text carries the template's special tokens and is tokenized without adding any.
 */
public interface ChatTemplate {

    /**
     * The prompt for {@code messages}, ending where the assistant's reply begins.
     *
     * @throws ChatTemplateException when the template refuses the conversation ({@code raise_exception}) or fails
     */
    String render(List<Message> messages);

    /**
     * One message as the template sees it: {@code message['role']}, {@code message['content']} and, when the client
     * gave one, {@code message['name']}.
     */
    record Message(String role, String content, String name) {

        public Message(String role, String content) {
            this(role, content, null);
        }
    }

    /** Makes templates of Jinja sources. */
    interface Compiler {

        /**
         * @param source   the template (tokenizer_config.json's {@code chat_template} or chat_template.jinja)
         * @param bosToken the text of {@code bos_token} in the template, or null (then undefined there)
         * @param eosToken the text of {@code eos_token}, or null
         */
        ChatTemplate compile(String source, String bosToken, String eosToken);
    }
}
