package io.butterfly.cli.command;

/** A command that failed for a reason its message gives in full: reported as one line, exit code 1. */
public final class CommandFailedException extends RuntimeException {

    public CommandFailedException(String message) {
        super(message);
    }
}
