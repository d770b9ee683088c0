package io.butterfly.cli.cluster;

import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code ps}: the started processes as a JSON array. */
@Command(name = "ps", description = "the started processes as a JSON array")
public final class PsCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().getOut().println(Launcher.fromEnvironment().ps());
    }
}
