package io.butterfly.cli.command;

/** The launcher's own lines, on stderr so that stdout stays what commands print: {@code [butterfly] ...}. */
public final class Log {

    private Log() {
    }

    public static void info(String message) {
        System.err.println("[butterfly] " + message);
    }
}
