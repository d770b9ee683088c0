package io.butterfly.cli.cluster;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.process.JavaRuntime;
import io.butterfly.cli.process.ServiceImages;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code build}: the service jars (./butterfly has built them if they were missing or older than the sources). */
@Command(name = "build", description = "build the jars if missing or stale (./butterfly does before all but down, ps and help);"
        + " print the services'")
public final class BuildCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        ServiceImages images = ServiceImages.besideTheJars(ButterflyHome.fromEnvironment().root(), JavaRuntime.current());
        ServiceImages.SERVICE_MODULES.forEach(m -> spec.commandLine().getOut().println(images.executableJar(m)));
    }
}
