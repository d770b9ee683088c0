package io.butterfly.registry.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A registry stopped in the middle of {@link ModelStore#commit} (between moving the model's directory aside and
 * moving the new one in) finds the model again when it starts: the complete new import, else the previous one.
 * The states are made by hand with the directory names commit uses.
 */
class InterruptedSwapTest {

    @TempDir
    Path root;

    @Test
    void aCompleteNewImportLeftBesideTheMovedAsideDirectoryIsSwappedIn() throws Exception {
        committed("m", "v1");
        Path staging = staged("m", "v2", true);
        moveAside("m");

        ModelStore store = new ModelStore(root);

        assertThat(store.load("m")).hasValueSatisfying(m -> assertThat(m.version()).isEqualTo("v2"));
        assertThat(Files.readString(root.resolve("m/layer_000.safetensors"))).isEqualTo("weights v2");
        assertThat(Files.exists(staging)).isFalse();
        assertThat(hiddenDirs()).isEmpty();
    }

    @Test
    void withoutACompleteImportThePreviousDirectoryIsRestored() throws Exception {
        committed("m", "v1");
        staged("m", "v2", false); // stopped before its manifest was written: not complete
        moveAside("m");

        ModelStore store = new ModelStore(root);

        assertThat(store.load("m")).hasValueSatisfying(m -> assertThat(m.version()).isEqualTo("v1"));
        assertThat(Files.readString(root.resolve("m/layer_000.safetensors"))).isEqualTo("weights v1");
        assertThat(hiddenDirs()).isEmpty();
    }

    @Test
    void leftoversBesideAnIntactModelAreDeletedAndTheModelKept() throws Exception {
        committed("m", "v1");
        staged("m", "v2", true); // stopped after the import, before the swap
        Path old = Files.createDirectories(root.resolve(".m.old-123")); // stopped while deleting the replaced one

        ModelStore store = new ModelStore(root);

        assertThat(store.load("m")).hasValueSatisfying(m -> assertThat(m.version()).isEqualTo("v1"));
        assertThat(Files.exists(old)).isFalse();
        assertThat(hiddenDirs()).isEmpty();
        assertThat(store.storedModelIds()).containsExactly("m");
    }

    @Test
    void aModelIdThatLooksLikeAMarkIsRecoveredUnderItsOwnName() throws Exception {
        committed("a.old-b", "v1");
        moveAside("a.old-b");

        ModelStore store = new ModelStore(root);

        assertThat(store.load("a.old-b")).hasValueSatisfying(m -> assertThat(m.version()).isEqualTo("v1"));
        assertThat(store.load("a")).isEmpty();
    }

    private void committed(String id, String version) throws Exception {
        ModelStore store = new ModelStore(root);
        store.commit(staged(id, version, false), manifest(id, version), "fingerprint-" + version);
    }

    /** A staging directory as an import leaves it; with its manifest if commit got as far as writing it. */
    private Path staged(String id, String version, boolean withManifest) throws Exception {
        Path staging = Files.createTempDirectory(root, "." + id + ".importing-");
        Files.writeString(staging.resolve("layer_000.safetensors"), "weights " + version);
        if (withManifest) {
            // what commit writes, last the manifest, into a directory that is not the model's yet
            Path scratch = Files.createTempDirectory("scratch");
            ModelStore other = new ModelStore(scratch);
            Path s = other.newStagingDir(id);
            Files.writeString(s.resolve("layer_000.safetensors"), "weights " + version);
            other.commit(s, manifest(id, version), "fingerprint-" + version);
            for (String f : List.of(ModelStore.MANIFEST_FILE, ModelStore.FINGERPRINT_FILE, ModelStore.BLOCK_INDEX_FILE)) {
                Files.copy(scratch.resolve(id).resolve(f), staging.resolve(f));
            }
            ModelStore.deleteRecursively(scratch);
        }
        return staging;
    }

    /** The first move of commit: the model's directory set aside. */
    private void moveAside(String id) throws Exception {
        Files.move(root.resolve(id), root.resolve("." + id + ".old-4567"));
    }

    private List<Path> hiddenDirs() throws Exception {
        try (Stream<Path> s = Files.list(root)) {
            return s.filter(p -> p.getFileName().toString().startsWith(".")).toList();
        }
    }

    private static Manifest manifest(String id, String version) {
        ManifestFile file = new ManifestFile("layer_000.safetensors", ("weights " + version).length(), "sha256",
                Sha256.hex(("weights " + version).getBytes()), FileKind.LAYER, 0, 1, "safetensors");
        return new Manifest(id, "llama", version, 1, 1, 8, 8, "F32", List.of(file), "00", 0, null, null);
    }
}
