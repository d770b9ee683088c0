package io.butterfly.cli.process;

import java.util.List;

/**
 * A service process to start: its name (its log is {@code <name>.log}), role and node id as listed, the module
 * whose jar it runs, the ports it is told to listen on, its heap and its further arguments.
 */
public record ServiceLaunch(String name, String role, String nodeId, String module, int httpPort, int grpcPort,
                            String heap, List<String> args) {

    public ServiceLaunch {
        args = List.copyOf(args);
    }
}
