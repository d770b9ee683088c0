package io.butterfly.registry.catalog;

import java.io.IOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The directories an import asked over the API may read from ({@code butterfly.registry.import-roots}). A path is
 * judged before anything on the file system is touched (normalized, it must lie under a root), then again as the file
 * system resolves it (a link under a root must not lead out of it). Every refusal reads the same, whether or not
 * anything exists at the path: the answer tells nothing of the registry's host outside its roots.
 */
public final class ImportRoots {

    /** The one answer to a path outside the roots. */
    public static final String OUTSIDE = "path is not under the registry's import roots (butterfly.registry.import-roots)";

    private final List<Path> roots;

    private ImportRoots(List<Path> roots) {
        this.roots = roots;
    }

    /** {@code roots} (absolute directories; none: no import may be asked over the API). */
    public static ImportRoots of(List<Path> roots) {
        List<Path> normalized = new ArrayList<>();
        for (Path root : roots) {
            if (!root.isAbsolute()) {
                throw new IllegalArgumentException("butterfly.registry.import-roots must be absolute paths: " + root);
            }
            normalized.add(root.normalize());
        }
        return new ImportRoots(List.copyOf(normalized));
    }

    public boolean any() {
        return !roots.isEmpty();
    }

    /**
     * The model directory or GGUF file {@code requested} names, as the file system resolves it, when it lies under a
     * root; throws {@link Refused} otherwise (with {@link #OUTSIDE} for anything outside, existing or not).
     */
    public Path resolve(String requested) {
        if (roots.isEmpty()) {
            throw new Refused("imports over the API are off: the registry has no import roots"
                    + " (butterfly.registry.import-roots)");
        }
        Path path;
        try {
            path = Path.of(requested);
        } catch (InvalidPathException e) {
            throw new Refused(OUTSIDE);
        }
        if (!path.isAbsolute()) {
            throw new Refused(OUTSIDE);
        }
        Path normalized = path.normalize();
        Path root = roots.stream().filter(normalized::startsWith).findFirst().orElseThrow(() -> new Refused(OUTSIDE));
        try {
            Path real = normalized.toRealPath();
            if (!real.startsWith(root.toRealPath())) {
                throw new Refused(OUTSIDE); // a link under the root leads out of it
            }
            return real;
        } catch (IOException e) {
            return normalized; // under a root, nothing there: the importer says so, as it may
        }
    }

    /** An import path refused: 403 naming {@code path}. */
    public static final class Refused extends RuntimeException {
        Refused(String message) {
            super(message);
        }
    }
}
