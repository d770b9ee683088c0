package io.butterfly.cli.process;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A class-data archive as a JVM records it at exit and uses it at start. JDK 25+ writes an AOT cache (classes
 * loaded and linked, plus method profiles, so the JIT starts from them); older JDKs a dynamic CDS archive of
 * the loaded classes.
 */
public enum ArchiveFormat {

    AOT_CACHE("aot", "-XX:AOTCache=", "-XX:AOTCacheOutput=", List.of("-XX:AOTMode=on"),
            List.of("-Xlog:cds*=error", "-Xlog:aot*=error")),
    DYNAMIC_CDS("jsa", "-XX:SharedArchiveFile=", "-XX:ArchiveClassesAtExit=", List.of("-Xshare:on"),
            List.of("-Xlog:cds*=error"));

    private final String extension;
    private final String use;
    private final String record;
    private final List<String> strict;
    private final List<String> quiet;

    ArchiveFormat(String extension, String use, String record, List<String> strict, List<String> quiet) {
        this.extension = extension;
        this.use = use;
        this.record = record;
        this.strict = strict;
        this.quiet = quiet;
    }

    /** The file name of an archive: {@code <base>.<extension>}. */
    String fileName(String base) {
        return base + "." + extension;
    }

    boolean isArchive(Path file) {
        return file.getFileName().toString().endsWith("." + extension);
    }

    /** Options that start a JVM from {@code archive}. */
    List<String> use(Path archive) {
        return List.of(use + archive);
    }

    /**
     * Options that have a JVM record {@code archive} when it exits. Its warnings about classes an archive cannot
     * hold (from signed jars, say) stay out of the service's log.
     */
    List<String> record(Path archive) {
        List<String> options = new ArrayList<>();
        options.add(record + archive);
        options.addAll(quiet);
        return options;
    }

    /** Options that make a JVM refuse to start unless it can map {@code archive} (an archive cut short fails). */
    List<String> check(Path archive) {
        List<String> options = new ArrayList<>(strict);
        options.add(use + archive);
        return options;
    }

    /** Whether a command line records an archive at exit (its process needs time to write it). */
    static boolean records(List<String> command) {
        for (ArchiveFormat f : values()) {
            if (command.stream().anyMatch(a -> a.startsWith(f.record))) {
                return true;
            }
        }
        return false;
    }
}
