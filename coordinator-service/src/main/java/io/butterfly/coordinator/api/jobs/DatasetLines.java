package io.butterfly.coordinator.api.jobs;

import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.jobs.DatasetEntry;
import io.butterfly.coordinator.model.ChatTemplate;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A dataset's JSONL read (docs/jobs.md): one JSON object a line, {@code {"prompt": "..."}} or
 * {@code {"messages": [{"role": "user", "content": "..."}]}}; other members are left alone (a dataset may carry ids or
 * references), blank lines are skipped. A refusal names the line: {@code dataset[3].prompt} is line 3's prompt.
 */
public final class DatasetLines {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private DatasetLines() {
    }

    public static List<DatasetEntry> parse(byte[] jsonl) {
        String[] lines = new String(jsonl, StandardCharsets.UTF_8).split("\n", -1);
        List<DatasetEntry> entries = new ArrayList<>();
        for (int i = 0; i < lines.length; i++) {
            if (!lines[i].isBlank()) {
                entries.add(entry(lines[i], "dataset[" + (i + 1) + "]"));
            }
        }
        if (entries.isEmpty()) {
            throw new InvalidRequestException("dataset", "the dataset holds no line");
        }
        return entries;
    }

    private static DatasetEntry entry(String line, String field) {
        JsonNode node;
        try {
            node = JSON.readTree(line);
        } catch (JacksonException e) {
            throw new InvalidRequestException(field, "not a JSON object: " + e.getOriginalMessage());
        }
        if (!node.isObject()) {
            throw new InvalidRequestException(field, "each line is a JSON object with \"prompt\" or \"messages\"");
        }
        JsonNode prompt = node.get("prompt");
        JsonNode messages = node.get("messages");
        if ((prompt == null) == (messages == null)) {
            throw new InvalidRequestException(field, "a line holds either \"prompt\" or \"messages\"");
        }
        if (prompt != null) {
            if (!prompt.isString() || prompt.asString().isEmpty()) {
                throw new InvalidRequestException(field + ".prompt", "prompt is a non-empty string");
            }
            return new DatasetEntry(prompt.asString(), null);
        }
        if (!messages.isArray() || messages.isEmpty()) {
            throw new InvalidRequestException(field + ".messages", "messages is a non-empty array");
        }
        List<ChatTemplate.Message> conversation = new ArrayList<>();
        for (int m = 0; m < messages.size(); m++) {
            JsonNode message = messages.get(m);
            String at = field + ".messages[" + m + "]";
            if (!message.isObject() || !message.path("role").isString() || !message.path("content").isString()) {
                throw new InvalidRequestException(at, "a message is an object with string \"role\" and \"content\"");
            }
            JsonNode name = message.get("name");
            conversation.add(new ChatTemplate.Message(message.get("role").asString(), message.get("content").asString(),
                    name != null && name.isString() ? name.asString() : null));
        }
        return new DatasetEntry(null, conversation);
    }
}
