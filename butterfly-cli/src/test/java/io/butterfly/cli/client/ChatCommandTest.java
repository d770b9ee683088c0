package io.butterfly.cli.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.butterfly.cli.command.Commands;
import java.io.BufferedReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The chat command against a stand-in for {@code /v1/chat/completions} (a JDK HttpServer streaming OpenAI's chunks):
 * what it sends, what it prints, and that the conversation carries every earlier turn.
 */
class ChatCommandTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private final List<JsonNode> requests = new ArrayList<>();
    private HttpServer coordinator;
    private int replies;

    @BeforeEach
    void startCoordinator() throws Exception {
        coordinator = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        coordinator.createContext("/v1/chat/completions", exchange -> {
            JsonNode request = JSON.readTree(exchange.getRequestBody().readAllBytes());
            requests.add(request);
            String last = request.path("messages").get(request.path("messages").size() - 1).path("content").asString();
            byte[] body;
            if (last.equals("fail")) {
                body = "{\"detail\": \"messages[0].role must be system, user or assistant\", \"field\": \"messages[0].role\"}"
                        .getBytes(StandardCharsets.UTF_8);
                exchange.sendResponseHeaders(400, body.length);
            } else {
                replies++;
                body = ("data: {\"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": \"\"}}]}\n\n"
                        + "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"Reply \"}}]}\n\n"
                        + "data: {\"choices\": [{\"index\": 0, \"delta\": {\"content\": \"" + replies + "\"}}]}\n\n"
                        + "data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\n"
                        + "data: {\"choices\": [], \"usage\": {\"prompt_tokens\": 9, \"completion_tokens\": 2}}\n\n"
                        + "data: [DONE]\n\n").getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().add("Content-Type", "text/event-stream");
                exchange.sendResponseHeaders(200, body.length);
            }
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(body);
            }
        });
        coordinator.start();
    }

    @AfterEach
    void stopCoordinator() {
        coordinator.stop(0);
    }

    private int run(String typed, String... args) {
        ChatCommand chat = new ChatCommand();
        chat.in = new BufferedReader(new StringReader(typed));
        CommandLine line = Commands.line(chat);
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        List<String> all = new ArrayList<>(List.of("--url", "http://127.0.0.1:" + coordinator.getAddress().getPort()));
        all.addAll(List.of(args));
        return line.execute(all.toArray(String[]::new));
    }

    @Test
    void aMessageGivenIsOneStreamedTurn() {
        assertThat(run("", "--system", "Be brief.", "--max-tokens", "16", "--temperature", "0", "--", "Hello", "there"))
                .isZero();
        JsonNode sent = requests.get(0);
        assertThat(sent.path("messages").toString()).isEqualTo("[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\"Hello there\"}]");
        assertThat(sent.path("stream").asBoolean()).isTrue();
        assertThat(sent.path("max_completion_tokens").asInt()).isEqualTo(16);
        assertThat(sent.path("temperature").asDouble()).isZero();
        assertThat(out.toString()).contains("assistant:  Reply 1\n").contains("9 prompt + 2 reply tokens, finish_reason=stop");
    }

    @Test
    void anInteractiveChatSendsEveryEarlierTurnAndSurvivesARefusal() {
        assertThat(run("Hi\nfail\nAnd now?\n/reset\nAgain\n/exit\n")).isZero();
        assertThat(requests).hasSize(4);
        assertThat(requests.get(2).path("messages").toString()).as("the refused turn is not part of the conversation")
                .isEqualTo("[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Reply 1\"},"
                        + "{\"role\":\"user\",\"content\":\"And now?\"}]");
        assertThat(requests.get(3).path("messages").toString()).as("/reset forgets")
                .isEqualTo("[{\"role\":\"user\",\"content\":\"Again\"}]");
        assertThat(err.toString()).contains("HTTP 400: messages[0].role must be system, user or assistant (field "
                + "messages[0].role)");
        assertThat(out.toString()).contains("assistant:  Reply 2\n");
    }
}
