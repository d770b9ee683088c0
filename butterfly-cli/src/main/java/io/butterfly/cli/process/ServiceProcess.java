package io.butterfly.cli.process;

/**
 * A started service as the process list holds it: one line {@code name role pid node_id http_port grpc_port}.
 */
public record ServiceProcess(String name, String role, long pid, String nodeId, int httpPort, int grpcPort) {

    static ServiceProcess parse(String line) {
        String[] f = line.trim().split("\\s+");
        if (f.length < 6) {
            throw new IllegalArgumentException("not a process list line: '" + line + "'");
        }
        return new ServiceProcess(f[0], f[1], Long.parseLong(f[2]), f[3], Integer.parseInt(f[4]), Integer.parseInt(f[5]));
    }

    String line() {
        return String.join(" ", name, role, Long.toString(pid), nodeId, Integer.toString(httpPort),
                Integer.toString(grpcPort));
    }

    ServiceProcess withPid(long newPid) {
        return new ServiceProcess(name, role, newPid, nodeId, httpPort, grpcPort);
    }
}
