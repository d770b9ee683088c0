package io.butterfly.worker.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * "--name value" / "--name=value" / "--flag" / positional argument parsing for the command-line tools.
 *
 * <p>Each command declares what it accepts ({@link Spec}). A flag never takes a value, so
 * {@code --json "some text"} leaves the text positional; an option the command does not declare is an error,
 * since a typo such as {@code --max-token 3} would otherwise be silently ignored. After {@code --} every
 * argument is positional. Mistakes surface as {@link UsageException}, which the tools report as one
 * {@code error:} line and exit code 2 (see {@link #usageError}).
 */
record Args(Map<String, String> options, List<String> positional) {

    /** What a command accepts: its name (for messages), the options that take a value and the flags that take none. */
    record Spec(String command, Set<String> valued, Set<String> flags) {
        Spec {
            valued = Set.copyOf(valued);
            flags = Set.copyOf(flags);
        }
    }

    /** A mistake in the command line, as opposed to a failure while running the command. */
    static final class UsageException extends IllegalArgumentException {
        UsageException(String message) {
            super(message);
        }
    }

    static Args parse(String[] args, int from, Spec spec) {
        Map<String, String> options = new HashMap<>();
        List<String> positional = new ArrayList<>();
        boolean optionsEnded = false;
        for (int i = from; i < args.length; i++) {
            String s = args[i];
            if (optionsEnded || !s.startsWith("--")) {
                positional.add(s);
                continue;
            }
            if (s.equals("--")) {
                optionsEnded = true;
                continue;
            }
            String name = s.substring(2);
            String value = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            if (spec.flags().contains(name)) {
                if (value != null) {
                    throw new UsageException("--" + name + " takes no value");
                }
                options.put(name, "true");
            } else if (spec.valued().contains(name)) {
                if (value == null) {
                    // "--max-tokens --json" is a forgotten value, not a value that looks like an option.
                    if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
                        throw new UsageException("--" + name + " needs a value");
                    }
                    value = args[++i];
                }
                options.put(name, value);
            } else {
                throw new UsageException("unknown option --" + name + " for " + spec.command());
            }
        }
        return new Args(options, positional);
    }

    String option(String name, String fallback) {
        return options.getOrDefault(name, fallback);
    }

    boolean has(String name) {
        return options.containsKey(name);
    }

    int intOption(String name, int fallback) {
        long v = longOption(name, fallback);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new UsageException("--" + name + " is out of range, got '" + options.get(name) + "'");
        }
        return (int) v;
    }

    long longOption(String name, long fallback) {
        String v = options.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new UsageException("--" + name + " must be an integer, got '" + v + "'");
        }
    }

    double doubleOption(String name, double fallback) {
        String v = options.get(name);
        if (v == null) {
            return fallback;
        }
        try {
            double d = Double.parseDouble(v);
            if (Double.isFinite(d)) { // parseDouble also accepts "NaN" and "Infinity"
                return d;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new UsageException("--" + name + " must be a number, got '" + v + "'");
    }

    /** Reports a usage error as every tool does: one line on stderr; returns the exit code, 2. */
    static int usageError(UsageException e, PrintStream err) {
        err.println("error: " + e.getMessage());
        return 2;
    }
}
