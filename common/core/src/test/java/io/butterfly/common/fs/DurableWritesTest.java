package io.butterfly.common.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.crypto.NodeIdentity;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 47, item 10: files that must survive a crash are written whole or not at all. A node's key pair is written
 * so that a crash between its two files leaves a pair that loads (before, the private key was written first and the
 * public key after it, non-atomically: a crash between left a private key without its public key, and the node
 * could not start again). A write on a full disk: {@code FullDiskTest} (discovery), on a real full file system.
 */
class DurableWritesTest {

    @TempDir
    Path dir;

    /**
     * A write of the pair that fails half-way (here the public key's, which cannot replace a directory: as a crash or
     * a full disk would stop it) leaves nothing that stops the next start from making a whole pair. Before, the
     * private key was in place by then, and every later start failed to load the pair.
     */
    @Test
    void aKeyPairWriteThatFailsHalfWayLeavesNothingThatStopsTheNextStart() throws IOException {
        Path node = dir.resolve("node");
        Files.createDirectories(node.resolve(NodeIdentity.PUBLIC_FILE));
        assertThatThrownBy(() -> NodeIdentity.loadOrCreate(node)).isInstanceOf(java.io.UncheckedIOException.class);
        Files.delete(node.resolve(NodeIdentity.PUBLIC_FILE));

        NodeIdentity identity = NodeIdentity.loadOrCreate(node);
        assertThat(NodeIdentity.loadOrCreate(node).publicKeyHex()).isEqualTo(identity.publicKeyHex());
    }

    @Test
    void aCrashBetweenTheKeyPairsFilesLeavesAPairThatLoads() throws IOException {
        // What a crash after the first of the two writes leaves: the public key, no private key (the commit mark).
        Path node = dir.resolve("node");
        Files.createDirectories(node);
        Files.writeString(node.resolve(NodeIdentity.PUBLIC_FILE), "torn\n");

        NodeIdentity identity = NodeIdentity.loadOrCreate(node);
        NodeIdentity again = NodeIdentity.loadOrCreate(node);
        assertThat(again.publicKeyHex()).as("a whole pair, loaded again").isEqualTo(identity.publicKeyHex());
        assertThat(Files.readString(node.resolve(NodeIdentity.PUBLIC_FILE)).strip()).isEqualTo(identity.publicKeyHex());
        assertThat(Files.getPosixFilePermissions(node.resolve(NodeIdentity.PRIVATE_FILE)))
                .isEqualTo(PosixFilePermissions.fromString("rw-------"));
        try (Stream<Path> files = Files.list(node)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder(NodeIdentity.PUBLIC_FILE,
                    NodeIdentity.PRIVATE_FILE);
        }
    }
}
