package io.butterfly.cli.bench;

import io.butterfly.cli.command.CommandFailedException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * llama.cpp as a peer measured in the same run: its prebuilt CPU build from the npm registry ({@code node-llama-cpp},
 * installed once under the state directory with {@code --ignore-scripts} and loaded with {@code build: "never"}, so
 * nothing is compiled or fetched from elsewhere), decoding the same GGUF file. One node process holds the model for the
 * whole benchmark and measures a generation whenever asked ({@code llama-peer.mjs}), so it can take its turn in the
 * interleaved rounds; between turns it waits on its input and takes no CPU.
 */
final class LlamaCppPeer implements AutoCloseable {

    /** The version measured (docs/benchmarks.md): its llama.cpp release is in its package. */
    static final String PACKAGE = "node-llama-cpp@3.22.1";

    private final Process process;
    private final BufferedReader in;
    private final Writer out;
    private final String description;

    private LlamaCppPeer(Process process, String description) {
        this.process = process;
        this.in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.out = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        this.description = description;
    }

    /**
     * Installs node-llama-cpp under {@code dir} if it is not there, and loads {@code gguf} in a node process.
     *
     * @param prompt the prompt's token ids (the same the clusters are given)
     */
    static LlamaCppPeer start(Path dir, Path gguf, int threads, int tokens, long[] prompt) throws IOException,
            InterruptedException {
        Files.createDirectories(dir);
        if (!Files.isDirectory(dir.resolve("node_modules/node-llama-cpp"))) {
            Files.writeString(dir.resolve("package.json"), "{\"name\": \"butterfly-peer\", \"private\": true, \"type\": \"module\"}\n");
            run(dir, List.of("npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", PACKAGE));
        }
        Path script = dir.resolve("llama-peer.mjs");
        try (InputStream s = LlamaCppPeer.class.getResourceAsStream("llama-peer.mjs")) {
            Files.write(script, s.readAllBytes());
        }
        List<String> command = new ArrayList<>(List.of("node", script.toString(), gguf.toString(),
                Integer.toString(threads), Integer.toString(tokens)));
        for (long t : prompt) {
            command.add(Long.toString(t));
        }
        Process p = new ProcessBuilder(command).directory(dir.toFile())
                .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("llama-peer.log").toFile())).start();
        LlamaCppPeer peer = new LlamaCppPeer(p, PACKAGE + ", " + threads + " threads");
        String ready = peer.in.readLine();
        if (ready == null || !ready.startsWith("ready")) {
            peer.close();
            throw new CommandFailedException("llama.cpp did not load " + gguf + " (see " + dir.resolve("llama-peer.log") + ")");
        }
        return peer;
    }

    String description() {
        return description;
    }

    /** One greedy generation's decode tokens/s. */
    double decodeTokensPerSecond() throws IOException {
        out.write("run\n");
        out.flush();
        String line = in.readLine();
        if (line == null || !line.startsWith("tokens_per_second ")) {
            throw new CommandFailedException("llama.cpp stopped answering: " + line);
        }
        return Double.parseDouble(line.substring("tokens_per_second ".length()));
    }

    private static void run(Path dir, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("npm.log").toFile())).start();
        if (!p.waitFor(15, TimeUnit.MINUTES) || p.exitValue() != 0) {
            p.destroyForcibly();
            throw new CommandFailedException(String.join(" ", command) + " failed (see " + dir.resolve("npm.log") + ")");
        }
    }

    @Override
    public void close() throws IOException {
        try {
            out.write("stop\n");
            out.flush();
        } catch (IOException ignored) {
            // already gone
        }
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
