package io.butterfly.cli.generate;

import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.ShowsUsageOnError;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code model}: what is done with model files (so far: {@code model generate}). */
@Command(name = "model", description = "model files: model generate writes a seeded random model",
        subcommands = GenerateModelCommand.class)
public final class ModelCommand implements Runnable, ShowsUsageOnError {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw Commands.usageError(spec, "model needs a subcommand: generate");
    }
}
