package io.butterfly.cli.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** {@code rm -rf}. */
public final class FileTrees {

    private FileTrees() {
    }

    /** Deletes a file or a directory with everything in it; nothing if it does not exist. */
    public static void delete(Path tree) {
        if (!Files.exists(tree)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(tree)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
