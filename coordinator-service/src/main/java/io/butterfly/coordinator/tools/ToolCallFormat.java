package io.butterfly.coordinator.tools;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * How a model writes its function calls, as its chat template teaches it (and as it shows a conversation's past calls
 * to it), and the reading of a reply in that format into calls:
 * <ul>
 * <li>{@link #HERMES} (Qwen2.5, Hermes): {@code <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>}, one
 * block per call, after any text;</li>
 * <li>{@link #LLAMA} (Llama 3.1+): the whole reply a JSON object {@code {"name": ..., "parameters": {...}}} (several
 * separated by {@code ;}), perhaps after {@code <|python_tag|>};</li>
 * <li>{@link #MISTRAL}: {@code [TOOL_CALLS]} then a JSON list {@code [{"name": ..., "arguments": {...}}]}.</li>
 * </ul>
 * A reply that does not parse as calls is text: nothing is made up from a malformed call.
 */
public enum ToolCallFormat {

    HERMES("<tool_call>"),
    LLAMA("{"),
    MISTRAL("[TOOL_CALLS]");

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern HERMES_CALL = Pattern.compile("<tool_call>\\s*(.*?)\\s*(?:</tool_call>|\\z)",
            Pattern.DOTALL);
    private static final String PYTHON_TAG = "<|python_tag|>";

    /** The text that starts the calls of a reply (for LLAMA: the reply's first character, after blanks). */
    private final String marker;

    ToolCallFormat(String marker) {
        this.marker = marker;
    }

    /** A call read from a reply: the function's name and its arguments as compact JSON text. */
    public record Call(String name, String arguments) {
    }

    /** A reply read: its text ({@code null} when it is only calls) and its calls (empty when none). */
    public record Parsed(String content, List<Call> calls) {
    }

    /**
     * The format a chat template teaches, read from its source: HERMES's tag, Mistral's {@code [TOOL_CALLS]}, else
     * Llama's JSON (the format of templates that only print the tools' JSON).
     */
    public static ToolCallFormat of(String templateSource) {
        if (templateSource.contains("<tool_call>")) {
            return HERMES;
        }
        if (templateSource.contains("[TOOL_CALLS]")) {
            return MISTRAL;
        }
        return LLAMA;
    }

    /**
     * Where in {@code text} the calls may begin: the index of the marker, or of a partial marker at its end (so a
     * stream holds back what may turn out to be a call), or {@code text.length()} when none can follow.
     */
    public int callsMayBeginAt(String text) {
        if (this == LLAMA) {
            String lead = text.stripLeading();
            return lead.isEmpty() || lead.startsWith("{") || PYTHON_TAG.startsWith(lead) || lead.startsWith(PYTHON_TAG)
                    ? 0 : text.length();
        }
        int at = text.indexOf(marker);
        if (at >= 0) {
            return at;
        }
        for (int k = Math.min(marker.length() - 1, text.length()); k > 0; k--) {
            if (marker.startsWith(text.substring(text.length() - k))) {
                return text.length() - k;
            }
        }
        return text.length();
    }

    /** The calls in {@code reply}, and its text before them; the whole reply as text when it holds none. */
    public Parsed parse(String reply) {
        List<Call> calls = switch (this) {
            case HERMES -> hermes(reply);
            case LLAMA -> llama(reply);
            case MISTRAL -> mistral(reply);
        };
        if (calls == null || calls.isEmpty()) {
            return new Parsed(reply, List.of());
        }
        // the text as a stream sends it: all of it but the blanks that lead up to the calls
        String before = this == LLAMA ? "" : reply.substring(0, reply.indexOf(marker)).stripTrailing();
        return new Parsed(before.isEmpty() ? null : before, calls);
    }

    private static List<Call> hermes(String reply) {
        int first = reply.indexOf("<tool_call>");
        if (first < 0) {
            return null;
        }
        List<Call> calls = new ArrayList<>();
        Matcher m = HERMES_CALL.matcher(reply);
        int end = first;
        while (m.find(end)) {
            if (m.start() != end && !reply.substring(end, m.start()).isBlank()) {
                return null; // text between or after calls: not a reply of calls
            }
            Call c = call(m.group(1), "arguments");
            if (c == null) {
                return null;
            }
            calls.add(c);
            end = m.end();
        }
        return reply.substring(end).isBlank() ? calls : null;
    }

    private static List<Call> llama(String reply) {
        String text = reply.strip();
        if (text.startsWith(PYTHON_TAG)) {
            text = text.substring(PYTHON_TAG.length()).strip();
        }
        if (!text.startsWith("{")) {
            return null;
        }
        List<Call> calls = new ArrayList<>();
        for (String part : text.split(";(?=\\s*\\{)")) {
            Call c = call(part, "parameters");
            if (c == null) {
                return null;
            }
            calls.add(c);
        }
        return calls;
    }

    private static List<Call> mistral(String reply) {
        int at = reply.indexOf("[TOOL_CALLS]");
        if (at < 0) {
            return null;
        }
        JsonNode list = read(reply.substring(at + "[TOOL_CALLS]".length()));
        if (list == null || !list.isArray() || list.isEmpty()) {
            return null;
        }
        List<Call> calls = new ArrayList<>();
        for (JsonNode item : list) {
            Call c = call(item, "arguments");
            if (c == null) {
                return null;
            }
            calls.add(c);
        }
        return calls;
    }

    private static Call call(String json, String argumentsKey) {
        JsonNode v = read(json);
        return v == null ? null : call(v, argumentsKey);
    }

    /** {@code {"name": ..., <argumentsKey>: {...}}} (either key of arguments accepted), or null. */
    private static Call call(JsonNode v, String argumentsKey) {
        if (!v.isObject() || !v.path("name").isString()) {
            return null;
        }
        JsonNode args = v.has(argumentsKey) ? v.get(argumentsKey) : v.has("arguments") ? v.get("arguments")
                : v.get("parameters");
        if (args == null || args.isNull()) {
            args = JSON.createObjectNode();
        }
        String arguments = args.isString() ? args.stringValue() : JSON.writeValueAsString(args);
        return new Call(v.get("name").stringValue(), arguments);
    }

    private static JsonNode read(String json) {
        try {
            return JSON.readTree(json.strip());
        } catch (JacksonException notJson) {
            return null;
        }
    }
}
