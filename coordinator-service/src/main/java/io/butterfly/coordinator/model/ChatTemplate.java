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
    default String render(List<Message> messages) {
        return render(messages, null);
    }

    /**
     * The prompt for {@code messages} with the functions the model may call: {@code tools} is OpenAI's list of tools
     * as the client sent it (plain maps and lists, {@code [{"type": "function", "function": {...}}]}), given to the
     * template as {@code tools} (as transformers' {@code apply_chat_template(tools=...)}); null when there are none.
     *
     * @throws ChatTemplateException when the template refuses the conversation ({@code raise_exception}) or fails
     */
    String render(List<Message> messages, List<Object> tools);

    /** The template's Jinja source (which tool call format it teaches the model is read from it). */
    String source();

    /**
     * One message as the template sees it: {@code message['role']}, {@code message['content']} and, when the client
     * gave them, {@code message['name']}, an assistant's {@code message['tool_calls']} and a tool result's
     * {@code message['tool_call_id']}.
     *
     * @param content   null for an assistant's message that only calls tools
     * @param toolCalls the calls an assistant's message made, or null
     */
    record Message(String role, String content, String name, List<ToolCall> toolCalls, String toolCallId) {

        public Message(String role, String content, String name) {
            this(role, content, name, null, null);
        }

        public Message(String role, String content) {
            this(role, content, null);
        }
    }

    /**
     * A function call of an assistant's message, as the template sees it: {@code {"id", "type": "function",
     * "function": {"name", "arguments"}}}, the arguments a dict when they are a JSON object (as transformers' templates
     * expect them), else the string the client sent.
     */
    record ToolCall(String id, String name, String arguments) {
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
