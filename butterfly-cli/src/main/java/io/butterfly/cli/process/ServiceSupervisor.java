package io.butterfly.cli.process;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

/**
 * Starts, lists, signals and stops service processes: each a JVM running its module's image, its output in
 * {@code <logs>/<name>.log}, listed in a process list file so that a later invocation (another JVM) finds it.
 * Processes outlive the JVM that started them.
 *
 * <p>A listed pid counts as a running service only while that process's command line names the checkout: a stale
 * list (after a reboot, or a crash) may name a pid the system has since given to an unrelated process, which must
 * not be signalled, nor mistaken for a running service.
 */
public final class ServiceSupervisor {

    /** How long a stopped service may take to exit before it is killed. */
    private static final Duration STOP_GRACE = Duration.ofSeconds(15);
    /** The same while a service records its class-data archive, which it writes on the way out (tens of MB). */
    private static final Duration STOP_GRACE_ARCHIVING = Duration.ofSeconds(90);

    /**
     * @param root        the checkout the services run from
     * @param processList the process list, one line per process: {@code name role pid node_id http_port grpc_port}
     * @param logs        the directory of the processes' logs
     * @param jvmOptions  a module's JVM options (placed before the class-data options, the heap and the jar)
     * @param environment set for the services on top of this JVM's environment
     */
    public record Settings(Path root, Path processList, Path logs, Function<String, List<String>> jvmOptions,
                           Map<String, String> environment) {

        public Settings {
            environment = Map.copyOf(environment);
        }
    }

    private final ServiceImages images;
    private final Settings settings;
    /** The command line of each service seen running, to start it again with after it was stopped. */
    private final Map<String, List<String>> commands = new HashMap<>();
    /** Services told to stop since they were (re)started: their exit is no surprise. */
    private final Set<String> stopped = new HashSet<>();
    /**
     * The processes this supervisor started, by pid: known to be ours even before their command line is the
     * service's (between the fork and the exec it is not).
     */
    private final Map<Long, Process> started = new HashMap<>();

    public ServiceSupervisor(ServiceImages images, Settings settings) {
        this.images = images;
        this.settings = settings;
    }

    /** Starts a service and lists it; it runs on when this JVM exits. */
    public synchronized ServiceProcess start(ServiceLaunch launch) {
        List<String> command = new ArrayList<>(launch.wrapper());
        command.add(images.java().java());
        command.addAll(settings.jvmOptions().apply(launch.module()));
        command.addAll(images.archiveOptions(launch.module(), launch.name()));
        command.addAll(List.of("-Xmx" + launch.heap(), "-jar", images.jar(launch.module()).toString(),
                "--server.port=" + launch.httpPort(), "--spring.grpc.server.port=" + launch.grpcPort()));
        command.addAll(launch.args());
        long pid = launch(launch.name(), command, false);
        ServiceProcess process = new ServiceProcess(launch.name(), launch.role(), pid, launch.nodeId(),
                launch.httpPort(), launch.grpcPort());
        write(process.line() + "\n", StandardOpenOption.APPEND);
        return process;
    }

    /** Starts a stopped service again with its command line (same ports and id), appending to its log. */
    public synchronized ServiceProcess restart(String name) {
        List<String> command = commands.get(name);
        if (command == null) {
            throw new IllegalStateException(name + " was not seen running: its command line is unknown");
        }
        long pid = launch(name, command, true);
        List<String> lines = new ArrayList<>();
        ServiceProcess restarted = null;
        for (ServiceProcess p : listed()) {
            if (p.name().equals(name)) {
                p = p.withPid(pid);
                restarted = p;
            }
            lines.add(p.line());
        }
        if (restarted == null) {
            throw new IllegalStateException(name + " is not in " + settings.processList());
        }
        write(String.join("\n", lines) + "\n", StandardOpenOption.TRUNCATE_EXISTING);
        return restarted;
    }

    private long launch(String name, List<String> command, boolean appendToLog) {
        Path log = log(name);
        try {
            Files.createDirectories(settings.logs());
            Files.createDirectories(settings.processList().getParent());
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectOutput(appendToLog ? ProcessBuilder.Redirect.appendTo(log.toFile())
                            : ProcessBuilder.Redirect.to(log.toFile()));
            builder.environment().putAll(settings.environment());
            Process process = builder.start();
            started.put(process.pid(), process);
            commands.put(name, List.copyOf(command));
            stopped.remove(name);
            return process.pid();
        } catch (IOException e) {
            throw new UncheckedIOException("could not start " + name, e);
        }
    }

    /** Every listed process, running or not (none before anything was started). */
    public synchronized List<ServiceProcess> listed() {
        Path list = settings.processList();
        try {
            if (!Files.exists(list)) {
                return List.of();
            }
            return Files.readAllLines(list).stream().filter(l -> !l.isBlank()).map(ServiceProcess::parse).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public Optional<ServiceProcess> listed(String name) {
        return listed().stream().filter(p -> p.name().equals(name)).findFirst();
    }

    /** The listed processes that run (from this checkout). */
    public List<ServiceProcess> running() {
        return listed().stream().filter(this::isRunning).toList();
    }

    /** The listed processes that exited although they were not told to stop. */
    public synchronized List<ServiceProcess> exited() {
        return listed().stream().filter(p -> !stopped.contains(p.name()) && !isRunning(p)).toList();
    }

    /** Whether the process runs, as a service of this checkout. */
    public synchronized boolean isRunning(ServiceProcess process) {
        Process child = started.get(process.pid());
        if (child != null) {
            return child.isAlive();
        }
        Optional<List<String>> command = commandLine(process.pid());
        if (command.isEmpty() || command.get().stream().noneMatch(a -> a.contains(settings.root() + File.separator))) {
            return false;
        }
        commands.putIfAbsent(process.name(), command.get());
        return true;
    }

    /** Sends {@code signal} to a running service; false if it does not run (nothing is sent). */
    public synchronized boolean signal(ServiceProcess process, Signal signal) {
        if (!isRunning(process)) {
            return false;
        }
        if (signal == Signal.TERM || signal == Signal.KILL) {
            stopped.add(process.name());
        }
        return switch (signal) {
            case TERM -> ProcessHandle.of(process.pid()).map(ProcessHandle::destroy).orElse(false);
            case KILL -> ProcessHandle.of(process.pid()).map(ProcessHandle::destroyForcibly).orElse(false);
            case STOP, CONT -> kill(signal, process.pid());
        };
    }

    /** SIGKILLs a service and waits until it has exited. */
    public void kill(String name) {
        ServiceProcess process = listed(name).orElseThrow(() -> new IllegalArgumentException("no service " + name));
        if (signal(process, Signal.KILL)) {
            awaitExit(process, Duration.ofSeconds(10));
        }
    }

    /**
     * Stops every listed service: SIGTERM, time to shut down (longer while one records its class-data archive),
     * SIGKILL for any still running; then keeps the archives they recorded and empties the list.
     */
    public synchronized void stopAll() {
        List<ServiceProcess> running = running();
        boolean archiving = running.stream().anyMatch(p -> ServiceImages.records(commands.getOrDefault(p.name(), List.of())));
        running.forEach(p -> signal(p, Signal.TERM));
        long deadline = System.nanoTime() + (archiving ? STOP_GRACE_ARCHIVING : STOP_GRACE).toNanos();
        while (!running().isEmpty() && System.nanoTime() < deadline) {
            sleep(200);
        }
        for (ServiceProcess p : running()) {
            signal(p, Signal.KILL);
            awaitExit(p, Duration.ofSeconds(10));
        }
        images.settle();
        try {
            Files.deleteIfExists(settings.processList());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Starts a new, empty process list (none of the listed processes may still run). */
    public synchronized void newList() {
        write("", StandardOpenOption.TRUNCATE_EXISTING);
        commands.clear();
        stopped.clear();
        started.clear();
    }

    public Path log(String name) {
        return settings.logs().resolve(name + ".log");
    }

    /** The last {@code lines} lines of a service's log. */
    public List<String> tail(String name, int lines) {
        try {
            List<String> all = Files.exists(log(name)) ? Files.readAllLines(log(name)) : List.of();
            return all.subList(Math.max(0, all.size() - lines), all.size());
        } catch (IOException | UncheckedIOException e) { // a log that is not text (yet)
            return List.of("(" + log(name) + ": " + e.getMessage() + ")");
        }
    }

    /** Waits (at most {@code timeout}) until the process has exited. */
    public void awaitExit(ServiceProcess process, Duration timeout) {
        ProcessHandle.of(process.pid()).ifPresent(h -> {
            try {
                h.onExit().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                // reported by whoever waits for it next
            }
        });
    }

    private void write(String text, StandardOpenOption mode) {
        try {
            Files.createDirectories(settings.processList().getParent());
            Files.writeString(settings.processList(), text, StandardOpenOption.CREATE, StandardOpenOption.WRITE, mode);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A process's command line, or empty once it has exited (or is no longer readable). */
    static Optional<List<String>> commandLine(long pid) {
        Path proc = Path.of("/proc", Long.toString(pid), "cmdline");
        if (Files.isDirectory(Path.of("/proc"))) {
            try {
                String s = new String(Files.readAllBytes(proc), StandardCharsets.UTF_8);
                if (s.isEmpty()) { // a zombie
                    return Optional.empty();
                }
                return Optional.of(Arrays.asList((s.endsWith("\0") ? s.substring(0, s.length() - 1) : s).split("\0")));
            } catch (IOException gone) {
                return Optional.empty();
            }
        }
        return ProcessHandle.of(pid).filter(ProcessHandle::isAlive).flatMap(h -> h.info().commandLine())
                .map(c -> List.of(c.split(" ")));
    }

    private static boolean kill(Signal signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal.name(), Long.toString(pid)).inheritIO().start();
            return kill.waitFor() == 0;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
