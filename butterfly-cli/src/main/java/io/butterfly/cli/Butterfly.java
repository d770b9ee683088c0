package io.butterfly.cli;

import io.butterfly.cli.bench.BenchCommand;
import io.butterfly.cli.bench.ChaosBenchCommand;
import io.butterfly.cli.bench.DetectBenchCommand;
import io.butterfly.cli.bench.HeadsBenchCommand;
import io.butterfly.cli.bench.MoeBenchCommand;
import io.butterfly.cli.bench.FailoverBenchCommand;
import io.butterfly.cli.bench.FaultScheduleCommand;
import io.butterfly.cli.bench.JobsBenchCommand;
import io.butterfly.cli.bench.LoadBenchCommand;
import io.butterfly.cli.bench.ProfileCommand;
import io.butterfly.cli.bench.ServeBenchCommand;
import io.butterfly.cli.bench.SoakCommand;
import io.butterfly.cli.client.ChatCommand;
import io.butterfly.cli.client.GenerateCommand;
import io.butterfly.cli.client.StatusCommand;
import io.butterfly.cli.cluster.BuildCommand;
import io.butterfly.cli.cluster.DownCommand;
import io.butterfly.cli.cluster.PsCommand;
import io.butterfly.cli.cluster.UpCommand;
import io.butterfly.cli.command.Commands;
import io.butterfly.cli.generate.KeygenCommand;
import io.butterfly.cli.generate.ModelCommand;
import io.butterfly.cli.jobs.JobsCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code ./butterfly}: the tools' one entry point. Without a command it prints the commands. */
@Command(name = "./butterfly",
        description = "Butterfly: distributed LLM inference on one machine (embedded default).%n",
        subcommands = {CommandLine.HelpCommand.class, DemoCommand.class, UpCommand.class, DownCommand.class,
                PsCommand.class, StatusCommand.class, GenerateCommand.class, ChatCommand.class, ModelCommand.class, KeygenCommand.class,
                BenchCommand.class, DetectBenchCommand.class, FailoverBenchCommand.class, LoadBenchCommand.class,
                ServeBenchCommand.class, ProfileCommand.class, ChaosBenchCommand.class, FaultScheduleCommand.class, SoakCommand.class,
                BuildCommand.class, JobsCommand.class, JobsBenchCommand.class, MoeBenchCommand.class,
                HeadsBenchCommand.class},
        footer = {"%n./butterfly help COMMAND shows a command's options. Logs and pids live under .butterfly/"
                + " (BUTTERFLY_HOME); the coordinator's REST API is on http://127.0.0.1:8080 (plus BUTTERFLY_PORT_OFFSET)."})
public final class Butterfly implements Runnable {

    @Spec
    CommandSpec spec;

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    static CommandLine commandLine() {
        return Commands.line(new Butterfly());
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }
}
