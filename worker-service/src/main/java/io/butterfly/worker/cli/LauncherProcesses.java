package io.butterfly.worker.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The processes {@code ./butterfly up} started, as the benchmarks that kill and restart them see them: the
 * launcher's process list ({@code <state>/run/procs}: {@code name role pid node_id http grpc}), their logs, and
 * the launcher itself.
 */
final class LauncherProcesses {

    private final Path launcher;
    private final Path procs;
    private final Path logs;

    LauncherProcesses(Path launcher, Path state) {
        this.launcher = launcher;
        this.procs = state.resolve("run/procs");
        this.logs = state.resolve("logs");
    }

    Path procs() {
        return procs;
    }

    /** The fields of every line of the process list (none before anything was started). */
    List<String[]> entries() throws IOException {
        List<String[]> out = new ArrayList<>();
        if (Files.exists(procs)) {
            for (String line : Files.readAllLines(procs)) {
                out.add(line.trim().split("\\s+"));
            }
        }
        return out;
    }

    /** Starts a killed process again with its original command line and log, and records the new pid. */
    void restart(String name, List<String> command) throws IOException {
        Process started = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logs.resolve(name + ".log").toFile()))
                .start();
        List<String> lines = new ArrayList<>();
        for (String[] f : entries()) {
            if (f.length >= 3 && f[0].equals(name)) {
                f[2] = Long.toString(started.pid());
            }
            lines.add(String.join(" ", f));
        }
        Files.write(procs, lines);
    }

    /** Runs {@code ./butterfly <args>} and fails if it does. */
    void launch(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(launcher.toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + " failed");
        }
    }

    static List<String> commandLine(long pid) throws IOException {
        String s = new String(Files.readAllBytes(Path.of("/proc/" + pid + "/cmdline")), StandardCharsets.UTF_8);
        if (s.endsWith("\0")) {
            s = s.substring(0, s.length() - 1);
        }
        return Arrays.asList(s.split("\0"));
    }

    static void signal(String signal, long pid) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
        if (kill.waitFor() != 0) {
            throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
        }
    }
}
