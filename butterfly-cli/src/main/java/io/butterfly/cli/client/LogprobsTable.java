package io.butterfly.cli.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;

/**
 * The logprobs of an inference response ({@code POST /api/v1/inference} with {@code logprobs: K}) for people:
 * one line per generated token with its id, its logprob ({@code token_logprobs}) and the K most likely tokens
 * at that step ({@code logprobs}, already sorted by the coordinator).
 *
 * <p>Tokens are shown by id: the response carries the text of the whole answer only, not of each token.
 */
final class LogprobsTable {

    private LogprobsTable() {
    }

    static List<String> render(JsonNode response) {
        JsonNode ids = response.path("token_ids");
        JsonNode chosen = response.path("token_logprobs");
        JsonNode top = response.path("logprobs");
        List<String> lines = new ArrayList<>();
        lines.add(String.format("logprobs: %4s %8s %9s   %s", "step", "token", "logprob", "most likely (token:logprob)"));
        for (int i = 0; i < ids.size(); i++) {
            StringBuilder alternatives = new StringBuilder();
            for (JsonNode t : top.path(i)) {
                alternatives.append(String.format(Locale.ROOT, "  %d:%.4f", t.path("token_id").asLong(),
                        t.path("logprob").asDouble()));
            }
            JsonNode logprob = chosen.path(i);
            lines.add(String.format(Locale.ROOT, "          %4d %8d %9s %s", i + 1, ids.get(i).asLong(),
                    logprob.isNumber() ? String.format(Locale.ROOT, "%.4f", logprob.asDouble()) : "-", alternatives));
        }
        return lines;
    }
}
