package io.butterfly.cli.home;

import java.nio.file.Path;

/**
 * Where the tools find the checkout (its module jars) and keep their state: {@code .butterfly/} in the checkout,
 * or {@code BUTTERFLY_HOME}. The state holds the process list and pids ({@code run/}), the services' logs
 * ({@code logs/}), their data, the registry's store, the generated models, the cluster CA and node certificates
 * ({@code tls/}) and the API keys ({@code keys/}).
 *
 * @param root  the checkout (./butterfly passes it as the system property {@code butterfly.root})
 * @param state the state directory
 */
public record ButterflyHome(Path root, Path state) {

    public static ButterflyHome fromEnvironment() {
        Path root = Path.of(System.getProperty("butterfly.root", "")).toAbsolutePath().normalize();
        String home = System.getenv("BUTTERFLY_HOME");
        return new ButterflyHome(root, home == null || home.isEmpty() ? root.resolve(".butterfly")
                : Path.of(home).toAbsolutePath().normalize());
    }

    /** The same checkout with its state elsewhere (a benchmark's second cluster). */
    public ButterflyHome withState(Path otherState) {
        return new ButterflyHome(root, otherState);
    }

    public Path run() {
        return state.resolve("run");
    }

    public Path processList() {
        return run().resolve("procs");
    }

    public Path logs() {
        return state.resolve("logs");
    }

    public Path data(String service) {
        return state.resolve("data").resolve(service);
    }

    public Path registryStore() {
        return state.resolve("registry");
    }

    /** The API keys {@code up} makes: a user key and an admin key ({@link ClusterApiKeys}). */
    public Path keys() {
        return state.resolve("keys");
    }

    /** The cluster CA and the services' certificates. */
    public Path tls() {
        return state.resolve("tls");
    }

    public Path model(String name) {
        return state.resolve("models").resolve(name);
    }
}
