package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiChatChunk;
import io.butterfly.common.api.OpenAiChatCompletion;
import io.butterfly.common.api.OpenAiUsage;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import io.butterfly.coordinator.tools.ToolReply;

/** OpenAI's {@code chat.completion} objects: a whole answer, or one chunk of a streamed one. */
final class ChatJson {

    static final String ASSISTANT = "assistant";

    private ChatJson() {
    }

    /** The identity every object of one answer carries. */
    record Header(String id, long created, String model) {

        static Header of(String taskId, long created, String model) {
            return new Header("chatcmpl-" + taskId, created, model);
        }
    }

    /** A whole answer: the assistant's message, its logprobs (null unless asked for) and the usage. */
    static OpenAiChatCompletion completion(Header h, GenerationResult r, OpenAiChatCompletion.Logprobs logprobs) {
        return completion(h, List.of(r), java.util.Collections.singletonList(logprobs),
                g -> new ToolReply(g.text(), List.of(), g.finishReason()));
    }

    /**
     * A whole answer of {@code n} choices (one per result, in order, each with its logprobs or null); the usage counts
     * the prompt once and every choice's tokens, as OpenAI counts {@code n}.
     */
    static OpenAiChatCompletion completion(Header h, List<GenerationResult> results,
                                           List<OpenAiChatCompletion.Logprobs> logprobs,
                                           Function<GenerationResult, ToolReply> reply) {
        List<OpenAiChatCompletion.Choice> choices = new java.util.ArrayList<>(results.size());
        int completionTokens = 0;
        for (int i = 0; i < results.size(); i++) {
            GenerationResult r = results.get(i);
            ToolReply t = reply.apply(r);
            choices.add(new OpenAiChatCompletion.Choice(i, new OpenAiChatCompletion.Message(ASSISTANT, t.content(), null,
                    t.calls().isEmpty() ? null : t.calls().stream().map(ChatJson::toolCall).toList()),
                    logprobs.get(i), t.finishReason()));
            completionTokens += r.tokenIds().size();
        }
        return new OpenAiChatCompletion(h.id(), OpenAiChatCompletion.OBJECT, h.created(), h.model(), choices,
                OpenAiUsage.of(results.get(0).promptTokenIds().size(), completionTokens));
    }

    static OpenAiChatCompletion.ToolCall toolCall(ToolReply.Call c) {
        return new OpenAiChatCompletion.ToolCall(c.id(), OpenAiChatCompletion.ToolCall.FUNCTION,
                new OpenAiChatCompletion.Function(c.name(), c.arguments()));
    }

    /** A chunk of tool calls: each call's first piece carries its id, type and name. */
    static OpenAiChatChunk toolCallsChunk(Header h, List<OpenAiChatChunk.ToolCallDelta> calls) {
        return chunk(h, new OpenAiChatChunk.Delta(null, null, calls), null, null);
    }

    /** The first chunk of a stream: the role of the message that follows. */
    static OpenAiChatChunk roleChunk(Header h) {
        return chunk(h, new OpenAiChatChunk.Delta(ASSISTANT, ""), null, null);
    }

    /** A chunk of the message's text (and its tokens' logprobs). */
    static OpenAiChatChunk contentChunk(Header h, String text, OpenAiChatCompletion.Logprobs logprobs) {
        return chunk(h, new OpenAiChatChunk.Delta(null, text), logprobs, null);
    }

    /** The chunk that ends the message: an empty delta and the finish reason. */
    static OpenAiChatChunk finishChunk(Header h, String finishReason) {
        return chunk(h, new OpenAiChatChunk.Delta(null, null), null, finishReason);
    }

    /** The last chunk of a stream asked for {@code stream_options.include_usage}: no choices, the usage. */
    static OpenAiChatChunk usageChunk(Header h, GenerationResult r) {
        return new OpenAiChatChunk(h.id(), OpenAiChatChunk.OBJECT, h.created(), h.model(), List.of(),
                Optional.of(usage(r)));
    }

    /** {@code chunk}'s choice as choice {@code index} of a stream of several. */
    static OpenAiChatChunk atIndex(OpenAiChatChunk chunk, int index) {
        return new OpenAiChatChunk(chunk.id(), chunk.object(), chunk.created(), chunk.model(), chunk.choices().stream()
                .map(c -> new OpenAiChatChunk.Choice(index, c.delta(), c.logprobs(), c.finishReason())).toList(),
                chunk.usage());
    }

    /** The last chunk of a stream of several choices asked for the usage: the prompt once, every choice's tokens. */
    static OpenAiChatChunk usageChunk(Header h, List<GenerationResult> results) {
        return new OpenAiChatChunk(h.id(), OpenAiChatChunk.OBJECT, h.created(), h.model(), List.of(),
                Optional.of(OpenAiUsage.of(results.get(0).promptTokenIds().size(),
                        results.stream().mapToInt(r -> r.tokenIds().size()).sum())));
    }

    /** {@code chunk} as a stream asked for the usage writes it: saying it has none ({@code "usage": null}). */
    static OpenAiChatChunk withoutUsage(OpenAiChatChunk chunk) {
        return new OpenAiChatChunk(chunk.id(), chunk.object(), chunk.created(), chunk.model(), chunk.choices(),
                Optional.empty());
    }

    private static OpenAiChatChunk chunk(Header h, OpenAiChatChunk.Delta delta, OpenAiChatCompletion.Logprobs logprobs,
                                         String finishReason) {
        return new OpenAiChatChunk(h.id(), OpenAiChatChunk.OBJECT, h.created(), h.model(),
                List.of(new OpenAiChatChunk.Choice(0, delta, logprobs, finishReason)), null);
    }

    private static OpenAiUsage usage(GenerationResult r) {
        return OpenAiUsage.of(r.promptTokenIds().size(), r.tokenIds().size());
    }
}
