package io.butterfly.cli.client;

import io.butterfly.common.api.ApiJson;
import io.butterfly.common.api.OpenAiChatChunk;
import io.butterfly.common.api.OpenAiUsage;
import io.butterfly.cli.http.PlainHttp;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import tools.jackson.databind.JsonNode;

/**
 * A chat with the served model in the terminal, through {@code POST /v1/chat/completions} (the model's own chat
 * template): each line typed is a user message, the reply streams in as it is generated, and the conversation goes
 * on with every earlier turn. {@code /reset} forgets the turns, {@code /exit} (or end of input) ends. Given a message
 * as arguments it answers that one turn and exits (the demo does).
 */
@Command(name = "chat", description = "chat with the served model (its chat template), the reply streamed")
public final class ChatCommand implements Callable<Integer> {

    static final String EXIT = "/exit";
    static final String RESET = "/reset";

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "MESSAGE", arity = "0..*", description = "one message to answer, then exit (its words "
            + "joined by spaces); without it, an interactive chat")
    List<String> message = new ArrayList<>();

    @Option(names = "--system", paramLabel = "TEXT", description = "a system message before the conversation")
    String system;

    @Option(names = "--max-tokens", paramLabel = "N", description = "the longest reply, in tokens (default: as many as "
            + "fit, up to the coordinator's limit)")
    Integer maxTokens;

    @Option(names = "--temperature", paramLabel = "T", description = "0: greedy (default: OpenAI's, 1)")
    Double temperature;

    @Option(names = "--seed", paramLabel = "S", description = "sampling seed (default: a fresh one per reply)")
    Long seed;

    @Option(names = "--url", paramLabel = "URL", hidden = true, description = "the coordinator (default: this machine's)")
    String url;

    /** Where the typed lines come from (the terminal; tests give their own). */
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

    private final List<Map<String, String>> history = new ArrayList<>();

    @Override
    public Integer call() throws IOException {
        String coordinator = StatusCommand.coordinatorUrl(url);
        resetHistory();
        try {
            if (!message.isEmpty()) {
                spec.commandLine().getOut().println("you:        " + String.join(" ", message));
                return turn(coordinator, String.join(" ", message)) ? 0 : 1;
            }
            return interactive(coordinator);
        } catch (ConnectException e) {
            return StatusCommand.noCoordinator(spec, coordinator);
        }
    }

    private int interactive(String coordinator) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        out.println("chat with the served model; " + RESET + " forgets the conversation, " + EXIT + " (or end of input) "
                + "ends it");
        while (true) {
            out.print("you> ");
            out.flush();
            String line = in.readLine();
            if (line == null || line.strip().equals(EXIT)) {
                out.println();
                return 0;
            }
            if (line.strip().equals(RESET)) {
                resetHistory();
                out.println("(the conversation is forgotten)");
            } else if (!line.isBlank()) {
                turn(coordinator, line);
            }
        }
    }

    /** Sends the conversation with {@code text} as the user's next message, printing the reply as it streams. */
    private boolean turn(String coordinator, String text) throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        history.add(message("user", text));
        StringBuilder reply = new StringBuilder();
        String[] finishReason = new String[1];
        OpenAiUsage[] usage = new OpenAiUsage[1];
        String[] failure = new String[1];
        boolean[] started = new boolean[1];
        PlainHttp.Response response = PlainHttp.postForEvents(coordinator + "/v1/chat/completions",
                StatusCommand.JSON.writeValueAsString(requestBody()), Duration.ofMinutes(10), (name, data) -> {
                    if (data.equals("[DONE]")) {
                        return;
                    }
                    JsonNode event = StatusCommand.JSON.readTree(data);
                    if (event.has("error")) {
                        failure[0] = event.path("error").path("message").asString();
                        return;
                    }
                    OpenAiChatChunk chunk = ApiJson.reader().treeToValue(event, OpenAiChatChunk.class);
                    if (chunk.usage() != null && chunk.usage().isPresent()) {
                        usage[0] = chunk.usage().get();
                    }
                    if (chunk.choices() == null || chunk.choices().isEmpty()) {
                        return;
                    }
                    OpenAiChatChunk.Choice choice = chunk.choices().get(0);
                    OpenAiChatChunk.Delta delta = choice.delta();
                    if (!started[0] && delta != null && delta.role() != null) {
                        started[0] = true;
                        out.print("assistant:  ");
                    }
                    String piece = delta == null || delta.content() == null ? "" : delta.content();
                    reply.append(piece);
                    out.print(piece);
                    out.flush();
                    if (choice.finishReason() != null) {
                        finishReason[0] = choice.finishReason();
                    }
                });
        if (started[0]) {
            out.println();
        }
        if (response.status() != 200 || failure[0] != null) {
            history.remove(history.size() - 1); // the turn did not happen: the next one is sent without it
            err.println(response.status() != 200 ? "HTTP " + response.status() + ": " + detail(response.body())
                    : "the reply failed: " + failure[0]);
            return false;
        }
        history.add(message("assistant", reply.toString()));
        out.printf("            (%s%s)%n", usage[0] == null ? "" : usage[0].promptTokens() + " prompt + "
                        + usage[0].completionTokens() + " reply tokens, ",
                "finish_reason=" + (finishReason[0] == null ? "?" : finishReason[0]));
        out.flush();
        return true;
    }

    private Map<String, Object> requestBody() {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("messages", history);
        body.put("stream", true);
        body.put("stream_options", Map.of("include_usage", true));
        if (maxTokens != null) {
            body.put("max_completion_tokens", maxTokens);
        }
        if (temperature != null) {
            body.put("temperature", temperature);
        }
        if (seed != null) {
            body.put("seed", seed);
        }
        return body;
    }

    private void resetHistory() {
        history.clear();
        if (system != null) {
            history.add(message("system", system));
        }
    }

    /** A message as OpenAI's clients write it: role, then content. */
    private static Map<String, String> message(String role, String content) {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("role", role);
        m.put("content", content);
        return m;
    }

    /** A problem document's detail, or the body as it came. */
    private static String detail(String body) {
        try {
            JsonNode problem = StatusCommand.JSON.readTree(body);
            return problem.path("detail").isString() ? problem.path("detail").asString()
                    + (problem.path("field").isString() ? " (field " + problem.path("field").asString() + ")" : "")
                    : body;
        } catch (RuntimeException notJson) {
            return body;
        }
    }
}
