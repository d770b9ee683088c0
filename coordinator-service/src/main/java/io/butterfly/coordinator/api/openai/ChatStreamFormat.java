package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiChatChunk;
import io.butterfly.common.api.OpenAiChatCompletion;
import io.butterfly.coordinator.api.rest.StreamFormat;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.List;
import io.butterfly.coordinator.tools.ToolCallFormat;
import io.butterfly.coordinator.tools.ToolChoice;
import io.butterfly.coordinator.tools.ToolReply;
import io.butterfly.coordinator.tools.Tools;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;
import tools.jackson.databind.json.JsonMapper;

/**
 * A streamed chat answer as OpenAI's clients read it: unnamed events, a first chunk with the role, a chunk with each
 * token's text, a chunk with the finish reason (and one with the usage if asked: the other chunks then say
 * {@code "usage": null}, as OpenAI's do), then {@code [DONE]}. A failure after the first token is an {@code error}
 * object, then {@code [DONE]}, as for completions ({@link CompletionStreamFormat}).
 */
final class ChatStreamFormat implements StreamFormat {

    private final JsonMapper json;
    private final long created;
    private final String model;
    private final ChatLogprobs logprobs;
    private final boolean includeUsage;
    private final Tools tools;
    private final ToolCallFormat format;
    private boolean roleSent;
    /** The reply so far, and how much of it went out as content (with tools, text that may be a call is held). */
    private final StringBuilder text = new StringBuilder();
    private int sent;
    private boolean namedCallStarted;
    /** The choice's index; the task the stream's id names (null: each event's own). */
    private final int index;
    private final String streamTaskId;

    /** {@code logprobs} null unless the request asked for them. */
    ChatStreamFormat(JsonMapper json, long created, String model, ChatLogprobs logprobs, boolean includeUsage) {
        this(json, created, model, logprobs, includeUsage, Tools.NONE, null);
    }

    /**
     * With tools: a named function's arguments stream as pieces of its call; with {@code auto} the text streams until
     * what may be a call in the template's {@code format} begins, and the calls come whole at the end; with
     * {@code required} the list of calls comes at the end.
     */
    ChatStreamFormat(JsonMapper json, long created, String model, ChatLogprobs logprobs, boolean includeUsage,
                     Tools tools, ToolCallFormat format) {
        this(json, created, model, logprobs, includeUsage, tools, format, 0, null);
    }

    /**
     * Choice {@code index} of a stream of several ({@link ChatChoicesFormat}): its chunks carry its index and the
     * stream's id ({@code chatcmpl-} + {@code streamTaskId}, the first choice's task).
     */
    ChatStreamFormat(JsonMapper json, long created, String model, ChatLogprobs logprobs, boolean includeUsage,
                     Tools tools, ToolCallFormat format, int index, String streamTaskId) {
        this.index = index;
        this.streamTaskId = streamTaskId;
        this.json = json;
        this.created = created;
        this.model = model;
        this.logprobs = logprobs;
        this.includeUsage = includeUsage;
        this.tools = tools;
        this.format = format;
    }

    @Override
    public List<SseEventBuilder> token(GeneratedToken t) {
        ChatJson.Header h = header(t.taskId());
        List<SseEventBuilder> events = new ArrayList<>(2);
        if (!roleSent) { // the events are made one stream at a time, in order (SerialDelivery)
            events.add(data(ChatJson.roleChunk(h)));
            roleSent = true;
        }
        switch (tools.choice().mode()) {
            case NONE -> {
                OpenAiChatCompletion.Logprobs lp = logprobs == null ? null
                        : logprobs.next(List.of(t.tokenId()), List.of(t.logprob()), List.of(t.topLogprobs()));
                events.add(data(ChatJson.contentChunk(h, t.text(), lp)));
            }
            case NAMED -> {
                startNamedCall(h, events, t.taskId());
                if (!t.text().isEmpty()) {
                    events.add(data(ChatJson.toolCallsChunk(h, List.of(new OpenAiChatChunk.ToolCallDelta(0, null, null,
                            new OpenAiChatCompletion.Function(null, t.text()))))));
                }
            }
            case REQUIRED -> text.append(t.text());
            case AUTO -> {
                text.append(t.text());
                int clear = Math.max(sent, contentEnd(text, format.callsMayBeginAt(text.toString())));
                if (clear > sent) {
                    events.add(data(ChatJson.contentChunk(h, text.substring(sent, clear), null)));
                    sent = clear;
                }
            }
        }
        return events;
    }

    /** A named function's call begins: its id, type and name, no arguments yet. */
    private void startNamedCall(ChatJson.Header h, List<SseEventBuilder> events, String taskId) {
        if (!namedCallStarted) {
            events.add(data(ChatJson.toolCallsChunk(h, List.of(new OpenAiChatChunk.ToolCallDelta(0,
                    ToolReply.callId(taskId, 0), OpenAiChatCompletion.ToolCall.FUNCTION,
                    new OpenAiChatCompletion.Function(tools.choice().function(), ""))))));
            namedCallStarted = true;
        }
    }

    /**
     * Where the text that may go out as content ends when calls may begin at {@code callsAt}: before the blanks that
     * lead up to them, which the whole answer's content leaves out too ({@link ToolCallFormat#parse}); they go out
     * once text follows them, or at the end of a reply without calls.
     */
    private static int contentEnd(CharSequence text, int callsAt) {
        int end = callsAt;
        while (end > 0 && Character.isWhitespace(text.charAt(end - 1))) {
            end--;
        }
        return end;
    }

    /** What a reply with tools still owes at its end: held text or the calls; and its finish reason. */
    private String finishTools(ChatJson.Header h, GenerationResult r, List<SseEventBuilder> events) {
        ToolReply reply = ToolReply.of(tools, format, r.taskId(), r.text(), r.finishReason());
        if (tools.choice().mode() == ToolChoice.Mode.NAMED) {
            startNamedCall(h, events, r.taskId());
            return reply.finishReason();
        }
        String all = r.text();
        int before = reply.calls().isEmpty() ? all.length() : Math.max(sent, format == null ? 0
                : tools.choice().mode() == ToolChoice.Mode.AUTO ? contentEnd(all, format.callsMayBeginAt(all)) : 0);
        if (before > sent) {
            events.add(data(ChatJson.contentChunk(h, all.substring(sent, before), null)));
        }
        sent = before;
        if (!reply.calls().isEmpty()) {
            List<OpenAiChatChunk.ToolCallDelta> calls = new ArrayList<>(reply.calls().size());
            for (int i = 0; i < reply.calls().size(); i++) {
                ToolReply.Call c = reply.calls().get(i);
                calls.add(new OpenAiChatChunk.ToolCallDelta(i, c.id(), OpenAiChatCompletion.ToolCall.FUNCTION,
                        new OpenAiChatCompletion.Function(c.name(), c.arguments())));
            }
            events.add(data(ChatJson.toolCallsChunk(h, calls)));
        }
        return reply.finishReason();
    }

    /** The events that end this choice: what tools still owe, and the chunk with its finish reason. */
    List<SseEventBuilder> finish(GenerationResult r) {
        ChatJson.Header h = header(r.taskId());
        List<SseEventBuilder> events = new ArrayList<>(3);
        if (!roleSent) {
            events.add(data(ChatJson.roleChunk(h)));
            roleSent = true;
        }
        String finish = tools.active() ? finishTools(h, r, events) : r.finishReason();
        events.add(data(ChatJson.finishChunk(h, finish)));
        return events;
    }

    @Override
    public List<SseEventBuilder> done(GenerationResult r) {
        ChatJson.Header h = header(r.taskId());
        List<SseEventBuilder> events = new ArrayList<>(finish(r));
        if (includeUsage) {
            events.add(SseEmitter.event().data(" " + json.writeValueAsString(ChatJson.usageChunk(h, r))));
        }
        events.add(SseEmitter.event().data(" [DONE]"));
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return List.of(SseEmitter.event().data(" " + json.writeValueAsString(OpenAiErrors.body(problem))),
                SseEmitter.event().data(" [DONE]"));
    }

    /** A chunk of this choice; with usage asked for, one that says it has none (only the last chunk does). */
    private SseEventBuilder data(OpenAiChatChunk chunk) {
        OpenAiChatChunk mine = index == 0 ? chunk : ChatJson.atIndex(chunk, index);
        return SseEmitter.event().data(" " + json.writeValueAsString(includeUsage ? ChatJson.withoutUsage(mine) : mine));
    }

    private ChatJson.Header header(String taskId) {
        return ChatJson.Header.of(streamTaskId == null ? taskId : streamTaskId, created, model);
    }
}
