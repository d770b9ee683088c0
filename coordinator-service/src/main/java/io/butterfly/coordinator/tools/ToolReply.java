package io.butterfly.coordinator.tools;

import io.butterfly.common.hash.Sha256;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A generated reply read for the calls it makes: as the format of the model's template has them ({@code auto}), as
 * the arguments of the named function, or as the list of calls {@code required} constrained it to.
 *
 * @param content      the reply's text, null when it is only calls
 * @param calls        the calls, each with its id; empty when none
 * @param finishReason {@code tool_calls} when the reply ended with calls, else the generation's
 */
public record ToolReply(String content, List<Call> calls, String finishReason) {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String ALPHANUMERIC = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

    /** A call with its id. */
    public record Call(String id, String name, String arguments) {
    }

    /**
     * Reads {@code text}, the reply generation {@code taskId} ended with {@code finishReason}.
     */
    public static ToolReply of(Tools tools, ToolCallFormat format, String taskId, String text, String finishReason) {
        List<ToolCallFormat.Call> calls;
        String content = null;
        switch (tools.choice().mode()) {
            case NONE -> {
                return new ToolReply(text, List.of(), finishReason);
            }
            case NAMED -> calls = List.of(new ToolCallFormat.Call(tools.choice().function(), text));
            case REQUIRED -> calls = listed(text);
            default -> {
                ToolCallFormat.Parsed parsed = format.parse(text);
                calls = parsed.calls();
                content = parsed.content();
                if (!tools.parallel() && calls.size() > 1) {
                    calls = calls.subList(0, 1);
                }
            }
        }
        if (calls == null || calls.isEmpty()) {
            return new ToolReply(text, List.of(), finishReason); // a reply cut short of its calls, or none made
        }
        List<Call> out = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size(); i++) {
            out.add(new Call(callId(taskId, i), calls.get(i).name(), calls.get(i).arguments()));
        }
        return new ToolReply(content, out, "stop".equals(finishReason) ? "tool_calls" : finishReason);
    }

    /**
     * The id of call {@code index} of a task: a function of both, so a resumed or repeated stream names the call the
     * same; nine letters and digits, the ids Mistral's template requires (others take any).
     */
    public static String callId(String taskId, int index) {
        byte[] h = Sha256.digest((taskId + "/" + index).getBytes(StandardCharsets.UTF_8));
        StringBuilder id = new StringBuilder(9);
        for (int i = 0; i < 9; i++) {
            id.append(ALPHANUMERIC.charAt((h[i] & 0xff) % ALPHANUMERIC.length()));
        }
        return id.toString();
    }

    /** {@code [{"name": ..., "arguments": {...}}, ...]}, or null when the text is not a complete list. */
    private static List<ToolCallFormat.Call> listed(String text) {
        JsonNode list;
        try {
            list = JSON.readTree(text);
        } catch (JacksonException cut) {
            return null;
        }
        if (!list.isArray()) {
            return null;
        }
        List<ToolCallFormat.Call> calls = new ArrayList<>(list.size());
        for (JsonNode c : list) {
            calls.add(new ToolCallFormat.Call(c.path("name").asString(), JSON.writeValueAsString(c.get("arguments"))));
        }
        return calls;
    }
}
