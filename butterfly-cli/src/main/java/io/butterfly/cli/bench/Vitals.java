package io.butterfly.cli.bench;

import io.butterfly.cli.http.PlainHttp;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.stream.Stream;
import tools.jackson.databind.json.JsonMapper;

/**
 * What a soak watches of one service process: its heap in use (after a full GC, asked with {@code jcmd}, so that what
 * is measured is what is still referenced, not garbage not yet collected), its threads and open file descriptors and
 * resident memory (Linux's {@code /proc}).
 *
 * @param heapMb  heap in use in MiB, from its {@code jvm.memory.used} meter (area heap); -1 when it does not answer
 * @param threads its threads; -1 when gone
 * @param fds     its open file descriptors; -1 when gone
 * @param rssMb   its resident memory in MiB; -1 when gone
 */
record Vitals(double heapMb, long threads, long fds, long rssMb) {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    static Vitals of(long pid, int httpPort) {
        collectGarbage(pid);
        return new Vitals(heapMb(httpPort), statusField(pid, "Threads:"), fds(pid), statusField(pid, "VmRSS:") / 1024);
    }

    String describe() {
        return String.format(Locale.ROOT, "heap %.1f MiB, %d threads, %d fds, rss %d MiB", heapMb, threads, fds, rssMb);
    }

    private static void collectGarbage(long pid) {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        if (!Files.isExecutable(jcmd)) {
            return;
        }
        try {
            Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.run").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
        } catch (IOException e) {
            // measured without the collection
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static double heapMb(int httpPort) {
        try {
            PlainHttp.Response r = PlainHttp.get("http://127.0.0.1:" + httpPort
                    + "/actuator/metrics/jvm.memory.used?tag=area:heap", Duration.ofSeconds(10));
            return r.status() == 200
                    ? JSON.readTree(r.body()).path("measurements").get(0).path("value").asDouble() / (1024 * 1024) : -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static long fds(long pid) {
        try (Stream<Path> s = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return s.count();
        } catch (IOException e) {
            return -1;
        }
    }

    private static long statusField(long pid, String field) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.replaceAll("[^0-9]", ""));
                }
            }
        } catch (IOException | NumberFormatException e) {
            // gone
        }
        return -1;
    }
}
