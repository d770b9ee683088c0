package io.butterfly.cli.command;

import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;

/**
 * Picocli set up as every command expects: the same number parsing and error reports everywhere, a later option
 * overriding an earlier one ({@code --layers 2 ... --layers 4}), and {@code -h}/{@code --help} on each command.
 */
public final class Commands {

    private Commands() {
    }

    /** A command line for {@code command} (with its subcommands) set up as the tools run it. */
    public static CommandLine line(Object command) {
        CommandLine line = new CommandLine(command);
        addHelpOption(line);
        line.setOverwrittenOptionsAllowed(true);
        Numbers.register(line);
        line.setParameterExceptionHandler(new UsageErrors());
        line.setExecutionExceptionHandler((e, failed, parseResult) -> {
            if (e instanceof CommandFailedException) {
                failed.getErr().println("[butterfly] error: " + e.getMessage());
                failed.getErr().flush();
                return 1;
            }
            throw e;
        });
        return line;
    }

    /** A usage error found while running a command (an option's value out of its range, say): exit code 2. */
    public static ParameterException usageError(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    private static void addHelpOption(CommandLine line) {
        CommandSpec spec = line.getCommandSpec();
        spec.usageMessage().synopsisHeading("usage: ").sortOptions(false).width(100);
        if (spec.findOption("--help") == null) {
            spec.addOption(OptionSpec.builder("-h", "--help").usageHelp(true).description("show this help").build());
        }
        line.getSubcommands().values().forEach(Commands::addHelpOption);
    }
}
