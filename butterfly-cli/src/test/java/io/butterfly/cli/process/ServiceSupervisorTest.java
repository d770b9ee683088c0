package io.butterfly.cli.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The supervisor's view of a process list written by an earlier invocation: which listed pids are services of this
 * checkout, signalling them (and only them), starting a stopped one again and stopping them all. The "services" are
 * {@code sleep} processes run from a copy inside the checkout, so that their command line names it as a service's
 * does.
 */
class ServiceSupervisorTest {

    @TempDir
    Path root;

    private Path sleep;
    private ServiceSupervisor supervisor;
    private Process service;
    private long stale;

    @BeforeEach
    void listAServiceAStalePidAndAnUnrelatedProcess() throws Exception {
        sleep = Files.copy(Path.of(Files.exists(Path.of("/bin/sleep")) ? "/bin/sleep" : "/usr/bin/sleep"),
                Files.createDirectories(root.resolve("bin")).resolve("sleep"));
        assertThat(sleep.toFile().setExecutable(true)).isTrue();
        supervisor = new ServiceSupervisor(ServiceImages.under(root.resolve("images"), root, JavaRuntime.current()),
                new ServiceSupervisor.Settings(root, root.resolve("run/procs"), root.resolve("logs"), m -> List.of(), Map.of()));
        service = started(new ProcessBuilder(sleep.toString(), "600").start());
        Process ended = new ProcessBuilder(sleep.toString(), "0").start();
        ended.waitFor(10, TimeUnit.SECONDS);
        stale = ended.pid();
        Files.createDirectories(root.resolve("run"));
        Files.writeString(root.resolve("run/procs"), String.join("\n",
                "worker-0 worker " + service.pid() + " worker-0 8090 9090",
                "worker-1 worker " + stale + " worker-1 8091 9091",
                // this test's JVM: alive, but not run from the checkout
                "coordinator coordinator " + ProcessHandle.current().pid() + " coordinator-0 8080 9080") + "\n");
    }

    @AfterEach
    void stop() {
        service.destroyForcibly();
        supervisor.listed("worker-0").flatMap(p -> ProcessHandle.of(p.pid())).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Test
    void onlyAListedProcessRunningFromTheCheckoutIsARunningService() {
        assertThat(supervisor.listed()).extracting(ServiceProcess::name).containsExactly("worker-0", "worker-1", "coordinator");
        assertThat(supervisor.running()).extracting(ServiceProcess::name).containsExactly("worker-0");
        assertThat(supervisor.exited()).extracting(ServiceProcess::name).containsExactly("worker-1", "coordinator");
    }

    @Test
    void aProcessThatIsNotAServiceOfTheCheckoutIsNeverSignalled() {
        ServiceProcess unrelated = supervisor.listed("coordinator").orElseThrow();
        assertThat(supervisor.signal(unrelated, Signal.KILL)).isFalse();
        assertThat(supervisor.signal(supervisor.listed("worker-1").orElseThrow(), Signal.KILL)).isFalse();
        assertThat(ProcessHandle.current().isAlive()).isTrue();
    }

    @Test
    void aPausedServiceResumes() throws Exception {
        ServiceProcess worker = supervisor.listed("worker-0").orElseThrow();
        assertThat(supervisor.signal(worker, Signal.STOP)).isTrue();
        assertThat(state(worker.pid())).isEqualTo("T");
        assertThat(supervisor.signal(worker, Signal.CONT)).isTrue();
        assertThat(state(worker.pid())).isEqualTo("S");
    }

    @Test
    void aKilledServiceStartsAgainWithItsCommandLineAndIsListedWithItsNewPid() throws Exception {
        ServiceProcess before = supervisor.listed("worker-0").orElseThrow();
        supervisor.kill("worker-0");
        assertThat(service.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(supervisor.exited()).extracting(ServiceProcess::name).doesNotContain("worker-0"); // it was told to stop

        ServiceProcess after = supervisor.restart("worker-0");

        assertThat(after.pid()).isNotEqualTo(before.pid());
        assertThat(after).isEqualTo(before.withPid(after.pid()));
        assertThat(supervisor.listed()).containsExactly(after, supervisor.listed("worker-1").orElseThrow(),
                supervisor.listed("coordinator").orElseThrow());
        assertThat(supervisor.isRunning(after)).isTrue();
        assertThat(ServiceSupervisor.commandLine(after.pid()).orElseThrow()).containsExactly(sleep.toString(), "600");
        assertThat(supervisor.log("worker-0")).exists();
    }

    @Test
    void stopAllEndsTheServicesAndEmptiesTheList() throws Exception {
        supervisor.stopAll();

        assertThat(service.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(root.resolve("run/procs")).doesNotExist();
        assertThat(supervisor.listed()).isEmpty();
        assertThat(ProcessHandle.current().isAlive()).isTrue();
    }

    @Test
    void aNewListForgetsTheOldOne() {
        supervisor.newList();
        assertThat(supervisor.listed()).isEmpty();
    }

    @Test
    void awaitExitReturnsOnceTheProcessEnded() {
        ServiceProcess worker = supervisor.listed("worker-0").orElseThrow();
        supervisor.signal(worker, Signal.TERM);
        supervisor.awaitExit(worker, Duration.ofSeconds(10));
        assertThat(service.isAlive()).isFalse();
    }

    /** {@code process} once it runs {@code sleep} (until its exec, its command line is this JVM's). */
    private Process started(Process process) throws Exception {
        for (int i = 0; i < 250 && !ServiceSupervisor.commandLine(process.pid()).orElse(List.of()).contains("600"); i++) {
            Thread.sleep(20);
        }
        return process;
    }

    /** The process's state letter from /proc (S sleeping, T stopped), once it has settled. */
    private static String state(long pid) throws Exception {
        String state = "";
        for (int i = 0; i < 50; i++) {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
            state = stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
            if (!state.equals("R")) {
                break;
            }
            Thread.sleep(20);
        }
        return state;
    }
}
