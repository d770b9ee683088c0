package io.butterfly.coordinator.chat;

import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ChatTemplateException;
import io.butterfly.coordinator.model.ServedModel;
import java.util.List;
import java.util.Set;

/**
 * A conversation made into the served model's prompt, as transformers' {@code apply_chat_template(messages,
 * add_generation_prompt=True, tokenize=True)} makes it: the model's own chat template renders the messages, and the
 * text is tokenized without adding special tokens (the template writes its own, so a BOS is not doubled). Each
 * refusal names the field: {@code messages} (or one of them) for what the conversation or template cannot do.
 */
public final class ChatPrompt {

    /** The roles a conversation may hold: a tool's message answers an assistant's tool call. */
    static final Set<String> ROLES = Set.of("system", "user", "assistant", "tool");

    private ChatPrompt() {
    }

    /**
     * The prompt's token ids.
     *
     * @param maxPromptChars the longest rendered prompt accepted, in characters (checked before tokenizing)
     */
    public static long[] tokens(ServedModel model, List<ChatTemplate.Message> messages, int maxPromptChars) {
        return tokens(model, messages, null, maxPromptChars);
    }

    /**
     * The prompt's token ids with the tools the model may call shown by its template ({@code tools} null: none).
     *
     * @param maxPromptChars the longest rendered prompt accepted, in characters (checked before tokenizing)
     */
    public static long[] tokens(ServedModel model, List<ChatTemplate.Message> messages, List<Object> tools,
                                int maxPromptChars) {
        check(messages);
        ChatTemplate template = model.chatTemplate();
        if (template == null) {
            throw new InvalidRequestException("messages", "model " + model.manifest().modelId() + " has no chat "
                    + "template (chat_template in tokenizer_config.json, or chat_template.jinja): send a prompt to "
                    + "/v1/completions instead");
        }
        long text = messages.stream().mapToLong(ChatPrompt::chars).sum();
        if (text > maxPromptChars) {
            // Templates write each message's content into the prompt: too much text is refused before one runs on it.
            throw new InvalidRequestException("messages", "the conversation's messages hold " + text
                    + " characters, more than the prompt limit of " + maxPromptChars, true);
        }
        String prompt;
        try {
            prompt = template.render(messages, tools);
        } catch (ChatTemplateException e) {
            if (e.refused()) {
                throw new InvalidRequestException("messages", "the model's chat template refuses this conversation: "
                        + e.getMessage());
            }
            if (e.overLimit()) {
                throw new InvalidRequestException("messages", e.getMessage(), true);
            }
            throw e;
        }
        if (prompt.length() > maxPromptChars) {
            throw new InvalidRequestException("messages", "the conversation renders to a prompt of " + prompt.length()
                    + " characters, more than the limit of " + maxPromptChars, true);
        }
        long[] ids = model.tokenizer().encode(prompt, false);
        if (ids.length == 0) {
            throw new InvalidRequestException("messages", "the conversation renders to an empty prompt");
        }
        return ids;
    }

    /**
     * The tokens a reply may have when the request sets no limit: as many as fit the model's positions after the
     * prompt, up to the coordinator's limit (OpenAI's chat API has no default of its own).
     */
    public static int defaultMaxTokens(int promptTokens, int maxNewTokens, int maxPositions) {
        return Math.max(1, Math.min(maxNewTokens, maxPositions - promptTokens));
    }

    /** The text a message brings to the prompt: its content, name and calls' arguments. */
    private static long chars(ChatTemplate.Message m) {
        long n = (m.content() == null ? 0 : m.content().length()) + (m.name() == null ? 0 : m.name().length());
        if (m.toolCalls() != null) {
            for (ChatTemplate.ToolCall c : m.toolCalls()) {
                n += c.name().length() + c.arguments().length();
            }
        }
        return n;
    }

    private static void check(List<ChatTemplate.Message> messages) {
        if (messages.isEmpty()) {
            throw new InvalidRequestException("messages", "messages must hold at least one message");
        }
        for (int i = 0; i < messages.size(); i++) {
            String role = messages.get(i).role();
            if (!ROLES.contains(role)) {
                throw new InvalidRequestException("messages[" + i + "].role", "role must be system, user, assistant "
                        + "or tool, got " + role + (role.equals("function") ? " (function messages are deprecated: "
                        + "use tool)" : ""));
            }
        }
    }
}
