package io.butterfly.cli.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.cli.command.CommandFailedException;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CorePinningTest {

    @TempDir
    Path dir;

    @Test
    void workerIRunsOnCoreIModTheCores() {
        assertThat(CorePinning.wrapper(0, 2)).containsExactly("taskset", "-c", "0");
        assertThat(CorePinning.wrapper(1, 2)).containsExactly("taskset", "-c", "1");
        assertThat(CorePinning.wrapper(2, 2)).containsExactly("taskset", "-c", "0");
        assertThat(CorePinning.wrapper(5, 1)).containsExactly("taskset", "-c", "0");
    }

    @Test
    void tasksetMustBeAnExecutableOnThePath() throws Exception {
        Path empty = Files.createDirectories(dir.resolve("empty"));
        Path bin = Files.createDirectories(dir.resolve("bin"));
        assertThatThrownBy(() -> CorePinning.requireTaskset(empty.toString()))
                .isInstanceOf(CommandFailedException.class).hasMessageContaining("needs taskset");
        assertThatThrownBy(() -> CorePinning.requireTaskset(null)).isInstanceOf(CommandFailedException.class);
        Path taskset = Files.writeString(bin.resolve("taskset"), "#!/bin/sh\n");
        assertThatThrownBy(() -> CorePinning.requireTaskset(bin.toString())) // not executable
                .isInstanceOf(CommandFailedException.class);
        Files.setPosixFilePermissions(taskset, PosixFilePermissions.fromString("rwxr-xr-x"));
        CorePinning.requireTaskset(String.join(File.pathSeparator, List.of(empty.toString(), "", bin.toString())));
    }
}
