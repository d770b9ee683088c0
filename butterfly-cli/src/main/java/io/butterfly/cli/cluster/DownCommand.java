package io.butterfly.cli.cluster;

import picocli.CommandLine.Command;

/** {@code down}: stops everything {@code up} started. */
@Command(name = "down", description = "stop everything started by up")
public final class DownCommand implements Runnable {

    @Override
    public void run() {
        Launcher.fromEnvironment().down();
    }
}
