package io.butterfly.cli;

import io.butterfly.cli.client.ChatCommand;
import io.butterfly.cli.client.GenerateCommand;
import io.butterfly.cli.client.StatusCommand;
import io.butterfly.cli.cluster.ExitGuard;
import io.butterfly.cli.cluster.Launcher;
import io.butterfly.cli.cluster.UpCommand;
import io.butterfly.cli.cluster.UpOptions;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.Log;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code demo}: starts a cluster, runs a prompt and checks the answer against the whole model decoding in this
 * process, answers one chat turn through the model's chat template, shows the state and the processes, and stops the
 * cluster again (also when interrupted).
 */
@Command(name = "demo", description = "start, run a prompt and a chat turn, show state, stop")
public final class DemoCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Option(names = "--workers", defaultValue = "3", paramLabel = "N", description = "worker processes, 1-99 (default 3)")
    String workers;

    @Option(names = "--model", paramLabel = "DIR", description = "default: the generated demo model")
    Path model;

    @Option(names = "--prompt", paramLabel = "TEXT", description = "default: The butterfly effect is")
    String prompt = "The butterfly effect is";

    @Option(names = "--coordinators", defaultValue = "1", paramLabel = "1-3", description = "coordinator replicas")
    String coordinators;

    @Option(names = "--insecure", description = "TLS off: every gRPC port plaintext (default: mutual TLS)")
    boolean insecure;

    @Option(names = "--no-auth", description = "no API keys (default: a user key and an admin key under .butterfly/keys)")
    boolean noAuth;

    @Override
    public Integer call() {
        UpOptions options = UpOptions.defaults().withWorkers(UpCommand.workers(spec, workers)).withModel(model)
                .withCoordinators(UpCommand.coordinators(spec, coordinators)).withInsecure(insecure)
                .withApiKeys(noAuth ? UpOptions.ApiKeyFiles.NONE : UpOptions.ApiKeyFiles.MADE);
        Launcher launcher = Launcher.fromEnvironment();
        PrintWriter out = spec.commandLine().getOut();
        long t0 = System.nanoTime();
        launcher.up(options, out);
        // Armed only now: the cluster to stop is the one this demo started (a refused `up` leaves a running one be).
        try (ExitGuard downAtExit = ExitGuard.arm(launcher::down)) {
            Log.info("READY after " + (System.nanoTime() - t0) / 1_000_000_000L + " s");
            out.println();
            // The answer, then the same prompt decoded by the whole model in one process (as many engine threads as
            // a worker has): the split cluster must give the same tokens. The answer is streamed, printed as it comes.
            List<String> generate = new ArrayList<>(List.of("--max-tokens", "32", "--stream", "--compare-whole",
                    (model != null ? model : launcher.defaultModel()).toString(), "--threads",
                    Launcher.engineThreads(options.workers(), options.pinWorkers()), "--", prompt));
            int code = subcommand(new GenerateCommand()).execute(generate.toArray(String[]::new));
            if (code != 0) {
                return code;
            }
            out.println();
            // One chat turn: the conversation through the model's own chat template (ChatML for the demo model).
            code = subcommand(new ChatCommand()).execute("--system", "You are a helpful assistant.", "--max-tokens",
                    "16", "--temperature", "0", "--", "What is a butterfly?");
            if (code != 0) {
                return code;
            }
            out.println();
            code = subcommand(new StatusCommand()).execute();
            if (code != 0) {
                return code;
            }
            out.println();
            out.println(launcher.ps());
            out.flush();
            return 0;
        }
    }

    /** Another command, run as this one's part, printing where this one does. */
    private CommandLine subcommand(Object command) {
        CommandLine line = Commands.line(command);
        line.setOut(spec.commandLine().getOut());
        line.setErr(spec.commandLine().getErr());
        return line;
    }
}
