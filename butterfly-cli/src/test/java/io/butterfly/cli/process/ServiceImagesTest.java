package io.butterfly.cli.process;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Which class-data archive options a service process gets: recorded by a module's first process, or none at all. */
class ServiceImagesTest {

    @TempDir
    Path root;

    @Test
    void theFirstProcessOfAModuleRecordsAnArchiveAndTheNextRunsWithout() {
        ServiceImages images = ServiceImages.under(root.resolve("images"), root, JavaRuntime.current());
        assertThat(ServiceImages.records(images.archiveOptions("worker-service", "worker-0"))).isTrue();
        assertThat(images.archiveOptions("worker-service", "worker-1")).isEmpty();
        assertThat(ServiceImages.records(images.archiveOptions("coordinator-service", "coordinator"))).isTrue();
    }

    @Test
    void extractedImagesNeitherRecordNorUseArchives() {
        ServiceImages images = ServiceImages.extractedUnder(root.resolve("images"), root, JavaRuntime.current());
        assertThat(images.archiveOptions("worker-service", "worker-0")).isEmpty();
        assertThat(images.archiveOptions("worker-service", "worker-1")).isEmpty();
    }
}
