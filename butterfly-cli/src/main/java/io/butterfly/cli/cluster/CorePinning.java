package io.butterfly.cli.cluster;

import io.butterfly.cli.command.CommandFailedException;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Workers pinned one to a core, worker-i to core i mod the cores, by starting each worker's JVM under
 * {@code taskset -c}: on one machine that stands in for workers on separate machines, each computing on its own
 * core rather than wherever the scheduler puts it.
 */
final class CorePinning {

    private static final String TASKSET = "taskset";

    private CorePinning() {
    }

    /** The command worker {@code worker}'s JVM runs under on a machine of {@code cores} cores. */
    static List<String> wrapper(int worker, int cores) {
        return List.of(TASKSET, "-c", Integer.toString(worker % cores));
    }

    /** Fails unless taskset is on {@code path} (a PATH value), before anything is started. */
    static void requireTaskset(String path) {
        for (String dir : (path == null ? "" : path).split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, TASKSET))) {
                return;
            }
        }
        throw new CommandFailedException("pinning workers to cores needs taskset (util-linux, e.g. apt-get install"
                + " util-linux), which is not on the PATH");
    }
}
