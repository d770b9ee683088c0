package io.butterfly.coordinator.jobs;

import io.butterfly.coordinator.model.ChatTemplate;
import java.util.List;

/**
 * One sample's input, a line of a job's dataset: a prompt, or a conversation the served model's chat template makes
 * into one (exactly one of the two is set).
 */
public record DatasetEntry(String prompt, List<ChatTemplate.Message> messages) {

    public DatasetEntry {
        if ((prompt == null) == (messages == null)) {
            throw new IllegalArgumentException("a dataset line holds either \"prompt\" or \"messages\"");
        }
        messages = messages == null ? null : List.copyOf(messages);
    }
}
