package io.butterfly.cli.reference;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.butterfly.cli.client.GenerateCommand;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.worker.engine.ExecutorOptions;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The demo's check that the cluster answered like the whole model in one process: the same tokens are said to
 * be the same, a different one is named (exit 1). The expected tokens come from the plain DJL loop, a separate
 * implementation of the model, so the check's own decoding is checked too.
 */
class WholeModelCheckTest {

    private static final long[] PROMPT = {1, 17, 29, 3};

    @TempDir
    static Path dir;
    private static Path model;
    private static long[] expected;

    @BeforeAll
    static void model() throws Exception {
        model = dir.resolve("tiny-llama");
        int code = GenerateModelCommand.run(new String[]{"--arch", "llama", "--layers", "2", "--hidden", "64", "--heads", "4",
                "--kv-heads", "2", "--vocab", "512", "--seed", "7", "--out", model.toString()},
                new PrintWriter(Writer.nullWriter()), new PrintWriter(System.err, true));
        assertThat(code).isZero();
        try (PlainDjlLoop plain = PlainDjlLoop.load(model, new ExecutorOptions("cpu", 1, 0))) {
            expected = plain.greedy(PROMPT, 6);
        }
    }

    @Test
    void theWholeModelDecodesWhatTheIndependentLoopDecodes() throws Exception {
        assertThat(WholeModelCheck.greedy(model, PROMPT, 6, 1)).containsExactly(expected);
    }

    @Test
    void theSameTokensAreSaidToBeTheSame() throws Exception {
        String printed = generateAgainst(expected, 0);
        assertThat(printed).contains("whole model, one process: the same 6 tokens");
    }

    @Test
    void aDifferentTokenIsNamedAndFailsTheCommand() throws Exception {
        long[] changed = expected.clone();
        changed[4] = (changed[4] + 1) % 512;
        assertThat(generateAgainst(changed, 1)).contains("DIFFERENT at generated token 4: cluster " + changed[4]
                + ", whole model " + expected[4]);
    }

    @Test
    void aSampledAnswerIsNotCompared() throws Exception {
        assertThat(generateAgainst(expected, 0, "--temperature", "0.8")).contains("not compared");
    }

    @Test
    void theComparisonIsNotSilentlyDroppedForJsonOutput() {
        StringWriter err = new StringWriter();
        CommandLine generate = Commands.line(new GenerateCommand());
        generate.setOut(new PrintWriter(Writer.nullWriter()));
        generate.setErr(new PrintWriter(err, true));
        int code = generate.execute("--url", "http://127.0.0.1:9", "hello", "--json", "--compare-whole", model.toString());
        assertThat(code).isEqualTo(2);
        assertThat(err.toString()).contains("cannot be combined with --json");
    }

    /** Runs `generate --compare-whole` against a stand-in coordinator answering {@code tokens}; checks the exit code. */
    private static String generateAgainst(long[] tokens, int exitCode, String... extra) throws Exception {
        String answer = """
                {"task_id": "t1", "prompt_token_ids": [%s], "token_ids": [%s], "text": "x", "finish_reason": "length",
                 "usage": {"prompt_tokens": 4, "completion_tokens": 6, "total_tokens": 10},
                 "timings": {"time_to_first_token_ms": 1.0, "decode_tokens_per_second": 1.0}}
                """.formatted(join(PROMPT), join(tokens));
        HttpServer coordinator = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        coordinator.createContext("/api/v1/inference", exchange -> {
            exchange.getRequestBody().readAllBytes();
            byte[] body = answer.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(body);
            }
        });
        coordinator.start();
        try {
            StringWriter out = new StringWriter();
            String[] base = {"--url", "http://127.0.0.1:" + coordinator.getAddress().getPort(), "hello",
                    "--compare-whole", model.toString(), "--threads", "1"};
            String[] args = Arrays.copyOf(base, base.length + extra.length);
            System.arraycopy(extra, 0, args, base.length, extra.length);
            CommandLine generate = Commands.line(new GenerateCommand());
            generate.setOut(new PrintWriter(out, true));
            generate.setErr(new PrintWriter(System.err, true));
            int code = generate.execute(args);
            assertThat(code).isEqualTo(exitCode);
            return out.toString();
        } finally {
            coordinator.stop(0);
        }
    }

    private static String join(long[] ids) {
        return Arrays.stream(ids).mapToObj(Long::toString).collect(Collectors.joining(", "));
    }
}
