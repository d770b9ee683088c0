package io.butterfly.cli.process;

import java.util.ArrayList;
import java.util.List;

/**
 * A service process to start: its name (its log is {@code <name>.log}), role and node id as listed, the module
 * whose jar it runs, the ports it is told to listen on, its heap, its further arguments and the command its JVM
 * runs under ({@code taskset -c 0}, say, which then runs the JVM in its place; empty: none).
 */
public record ServiceLaunch(String name, String role, String nodeId, String module, int httpPort, int grpcPort,
                            String heap, List<String> args, List<String> wrapper) {

    public ServiceLaunch {
        args = List.copyOf(args);
        wrapper = List.copyOf(wrapper);
    }

    /** The same service with {@code more} arguments after its own. */
    public ServiceLaunch withArgs(List<String> more) {
        List<String> all = new ArrayList<>(args);
        all.addAll(more);
        return new ServiceLaunch(name, role, nodeId, module, httpPort, grpcPort, heap, all, wrapper);
    }

    /** A service whose JVM runs directly. */
    public ServiceLaunch(String name, String role, String nodeId, String module, int httpPort, int grpcPort,
                         String heap, List<String> args) {
        this(name, role, nodeId, module, httpPort, grpcPort, heap, args, List.of());
    }
}
