package io.butterfly.cli.bench;

import io.butterfly.cli.command.CommandFailedException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Drops files' pages from the kernel's page cache (GNU dd's {@code iflag=nocache count=0}: the file's clean pages
 * advised away, nobody else's), so that a timing reads them from the disk. A cold start of a real model is a read
 * from storage; the page cache cannot be kept warm for it either, as the kernel reclaims idle file pages while the
 * services start (this VM's DAMON scheme pages out unmapped file pages idle for 60 s).
 */
final class PageCache {

    private PageCache() {
    }

    static void evict(List<Path> files) throws IOException, InterruptedException {
        for (Path f : files) {
            Process p = new ProcessBuilder("dd", "if=" + f, "iflag=nocache", "count=0", "status=none")
                    .redirectErrorStream(true).start();
            String printed = new String(p.getInputStream().readAllBytes());
            if (p.waitFor() != 0) {
                throw new CommandFailedException("could not drop " + f + " from the page cache: " + printed.strip());
            }
        }
    }
}
