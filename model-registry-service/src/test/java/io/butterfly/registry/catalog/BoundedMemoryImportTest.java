package io.butterfly.registry.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.registry.store.ModelStore;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An import's memory does not grow with the model: a model whose embedding (96 MiB) is larger than the registry's
 * whole heap (64 MiB) imports, as it is and quantized, in a JVM of that heap. An import that fails is kept with its
 * cause, which whoever asks for the model is told.
 */
class BoundedMemoryImportTest {

    @TempDir
    Path tmp;

    /** Runs an import in this JVM (the child's entry point): args store, source, quantization or "none". */
    public static void main(String[] args) throws Exception {
        ModelCatalog catalog = new ModelCatalog(new ModelStore(Path.of(args[0])), new ModelImporter(Clock.systemUTC()));
        Manifest m = catalog.importModel(Path.of(args[1]), null,
                args[2].equals("none") ? null : WeightQuantization.byId(args[2]).orElseThrow());
        System.out.println("imported " + m.modelId() + " " + m.dtype() + " " + m.totalBytes());
    }

    @Test
    void aTensorLargerThanTheHeapImportsAsItIsAndQuantized() throws Exception {
        // vocab 49152 x hidden 512, float32: a 96 MiB embedding (and as large a head)
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 1, 512, 4, 2, 512, 49152, 64, 1e-5, 10000.0, false, 1, 2);
        Path model = ModelFixtures.write(config, 9, tmp.resolve("big"));
        assertThat(Files.size(model.resolve("model.safetensors"))).isGreaterThan(2L * 96 << 20);
        for (String quantize : List.of("none", "q8")) {
            Process p = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx64m", "-cp", System.getProperty("java.class.path"), BoundedMemoryImportTest.class.getName(),
                    tmp.resolve("store").toString(), model.toString(), quantize)
                    .redirectErrorStream(true).start();
            String output = new String(p.getInputStream().readAllBytes());
            assertThat(p.waitFor(5, TimeUnit.MINUTES)).isTrue();
            assertThat(p.exitValue()).as(output).isZero();
            assertThat(output).contains("imported big" + (quantize.equals("none") ? " F32" : "-q8 Q8_0"));
        }
    }

    @Test
    void aFailedImportIsKeptWithItsCauseUntilOneSucceeds() throws Exception {
        Path model = ModelFixtures.write(ModelFixtures.tinyLlama(false), 3, tmp.resolve("tiny"));
        Path weights = model.resolve("model.safetensors");
        byte[] good = Files.readAllBytes(weights);
        Files.write(weights, java.util.Arrays.copyOf(good, 100)); // truncated: not a safetensors file any more
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        assertThatThrownBy(() -> catalog.importModel(model, null)).isInstanceOf(ButterflyException.class);
        assertThat(catalog.failures()).singleElement().satisfies(f -> {
            assertThat(f.modelId()).isEqualTo("tiny");
            assertThat(f.cause()).contains("model.safetensors");
        });
        assertThatThrownBy(() -> catalog.get("tiny")).isInstanceOfSatisfying(ButterflyException.class, e -> {
            assertThat(e.kind()).isEqualTo(ErrorKind.FAILED_PRECONDITION);
            assertThat(e.getMessage()).contains("import of model 'tiny'").contains("model.safetensors");
        });
        assertThatThrownBy(() -> catalog.get("other")).isInstanceOfSatisfying(ButterflyException.class,
                e -> assertThat(e.kind()).isEqualTo(ErrorKind.NOT_FOUND));

        Files.write(weights, good);
        catalog.importModel(model, null);
        assertThat(catalog.failures()).isEmpty();
        assertThat(catalog.get("tiny").modelId()).isEqualTo("tiny");
    }
}
