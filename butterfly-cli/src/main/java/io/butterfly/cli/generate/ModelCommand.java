package io.butterfly.cli.generate;

import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.ShowsUsageOnError;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code model}: what is done with model files: {@code model generate}, {@code model gguf}. */
@Command(name = "model", description = "model files: model generate writes a seeded random model, model gguf a GGUF file",
        subcommands = {GenerateModelCommand.class, GgufCommand.class})
public final class ModelCommand implements Runnable, ShowsUsageOnError {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw Commands.usageError(spec, "model needs a subcommand: generate or gguf");
    }
}
