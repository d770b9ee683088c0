package io.butterfly.cli.command;

/** A command whose usage follows its usage errors (one with many options, each with its rules). */
public interface ShowsUsageOnError {
}
