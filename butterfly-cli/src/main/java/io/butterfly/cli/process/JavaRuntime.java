package io.butterfly.cli.process;

import java.nio.file.Path;

/**
 * The JVM that runs the services: this one. Its runtime version names the directory its images live in,
 * since a class-data archive only fits the JVM that wrote it.
 *
 * @param java    the {@code java} binary
 * @param version the full runtime version, e.g. {@code 17.0.15+6-Debian-1deb12u1}
 * @param feature the feature release, e.g. 17
 */
public record JavaRuntime(String java, String version, int feature) {

    public static JavaRuntime current() {
        return new JavaRuntime(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                System.getProperty("java.runtime.version"), Runtime.version().feature());
    }

    /** How this JVM records and uses class-data archives. */
    public ArchiveFormat archiveFormat() {
        return feature >= 25 ? ArchiveFormat.AOT_CACHE : ArchiveFormat.DYNAMIC_CDS;
    }
}
