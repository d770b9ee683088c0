package io.butterfly.cli.command;

import java.io.PrintWriter;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.MissingParameterException;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.TypeConversionException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * A mistake in a command line, as opposed to a failure while running the command: reported as one
 * {@code error:} line naming the option or argument, exit code 2. Nothing has been done by then.
 */
final class UsageErrors implements CommandLine.IParameterExceptionHandler {

    /** Picocli's report of a flag given a value ({@code --json=yes}). */
    private static final Pattern FLAG_WITH_VALUE = Pattern.compile("option '(\\S+)' should be specified without '.*' parameter");

    @Override
    public int handleParseException(ParameterException ex, String[] args) {
        CommandLine line = ex.getCommandLine();
        PrintWriter err = line.getErr();
        err.println("error: " + message(ex));
        boolean unknownCommand = ex instanceof UnmatchedArgumentException && !line.getSubcommands().isEmpty();
        if (unknownCommand || line.getCommand() instanceof ShowsUsageOnError) {
            err.println();
            line.usage(err);
        }
        err.flush();
        return line.getCommandSpec().exitCodeOnInvalidInput();
    }

    static String message(ParameterException ex) {
        CommandLine line = ex.getCommandLine();
        String command = command(line);
        // An unknown option first: a missing prompt may only be a typo's consequence (--verbos TEXT).
        List<String> unmatched = ex instanceof UnmatchedArgumentException u ? u.getUnmatched() : line.getUnmatchedArguments();
        if (ex instanceof UnmatchedArgumentException || !unmatched.isEmpty() && unmatched.get(0).startsWith("-")) {
            String first = unmatched.isEmpty() ? "" : unmatched.get(0);
            if (first.startsWith("-")) {
                int eq = first.indexOf('=');
                return "unknown option " + (eq < 0 ? first : first.substring(0, eq)) + (command.isEmpty() ? "" : " for " + command);
            }
            if (!line.getSubcommands().isEmpty()) {
                return "unknown command '" + first + "'" + (command.isEmpty() ? "" : " for " + command);
            }
            return command + " takes no arguments (got: " + String.join(" ", unmatched) + ")";
        }
        if (ex instanceof MissingParameterException m && !m.getMissing().isEmpty()) {
            ArgSpec missing = m.getMissing().get(0);
            return missing instanceof OptionSpec o ? o.longestName() + " needs a value"
                    : command + " needs " + missing.paramLabel();
        }
        if (ex.getCause() instanceof TypeConversionException t && ex.getArgSpec() instanceof OptionSpec o) {
            return o.longestName() + " " + t.getMessage();
        }
        Matcher flag = FLAG_WITH_VALUE.matcher(ex.getMessage());
        return flag.matches() ? flag.group(1) + " takes no value" : ex.getMessage();
    }

    /**
     * The command as typed after the tool's name, e.g. {@code model generate}; none for the tool itself. A command
     * run on its own (not under the tool) goes by its name.
     */
    private static String command(CommandLine line) {
        if (line.getParent() == null) {
            return line.getSubcommands().isEmpty() ? line.getCommandName() : "";
        }
        String qualified = line.getCommandSpec().qualifiedName(" ");
        return qualified.substring(qualified.indexOf(' ') + 1);
    }
}
