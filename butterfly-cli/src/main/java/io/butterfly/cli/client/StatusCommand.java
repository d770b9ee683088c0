package io.butterfly.cli.client;

import io.butterfly.cli.cluster.PortLayout;
import io.butterfly.cli.http.PlainHttp;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/** {@code status}: the system state as the coordinator reports it ({@code GET /api/v1/system/state}). */
@Command(name = "status", description = "system state (GET /api/v1/system/state)")
public final class StatusCommand implements Callable<Integer> {

    static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    @Spec
    CommandSpec spec;

    @Option(names = "--url", paramLabel = "URL", hidden = true, description = "the coordinator (default: this machine's)")
    String url;

    @Override
    public Integer call() throws IOException {
        String coordinator = coordinatorUrl(url);
        try {
            spec.commandLine().getOut().println(JSON.writeValueAsString(
                    JSON.readTree(PlainHttp.get(coordinator + "/api/v1/system/state", Duration.ofSeconds(10)).body())));
            return 0;
        } catch (ConnectException e) {
            return noCoordinator(spec, coordinator);
        }
    }

    /** {@code url}, or the coordinator of the cluster {@code up} starts here. */
    static String coordinatorUrl(String url) {
        return url != null ? url : PortLayout.fromEnvironment().coordinatorUrl();
    }

    static int noCoordinator(CommandSpec spec, String url) {
        spec.commandLine().getErr().println("no coordinator answers at " + url + " (start a cluster with ./butterfly up)");
        return 1;
    }
}
