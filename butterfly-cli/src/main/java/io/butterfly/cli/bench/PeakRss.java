package io.butterfly.cli.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;

/**
 * A process's peak resident memory as Linux keeps it ({@code VmHWM} in {@code /proc/PID/status}): everything it ever
 * held at once, heap, native weights, KV caches and mapped pages it touched, not a sample that may miss the peak.
 */
final class PeakRss {

    private PeakRss() {
    }

    /** The peak in MiB, or empty where the process is gone or the system keeps no such figure. */
    static OptionalLong megabytes(long pid) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
                if (line.startsWith("VmHWM:")) {
                    return OptionalLong.of(Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // gone, or not Linux
        }
        return OptionalLong.empty();
    }
}
