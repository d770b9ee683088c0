package io.butterfly.common.crypto;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class NodeIdentityTest {

    @Test
    void anIdentityIsCreatedOnceAndReloadedFromItsDirectory(@TempDir Path dir) {
        NodeIdentity first = NodeIdentity.loadOrCreate(dir);
        NodeIdentity again = NodeIdentity.loadOrCreate(dir);

        assertThat(again.publicKeyHex()).isEqualTo(first.publicKeyHex());
        byte[] message = "join cluster butterfly".getBytes();
        assertThat(Ed25519.verify(first.publicKey(), message, again.sign(message))).isTrue();
    }

    @Test
    void aSignatureHoldsOnlyForItsMessageAndItsKey() {
        NodeIdentity alice = NodeIdentity.ephemeral();
        NodeIdentity mallory = NodeIdentity.ephemeral();
        byte[] message = "assign layers [0, 4)".getBytes();
        byte[] signature = alice.sign(message);

        assertThat(Ed25519.verify(alice.publicKey(), message, signature)).isTrue();
        assertThat(Ed25519.verify(alice.publicKey(), "assign layers [0, 5)".getBytes(), signature)).isFalse();
        assertThat(Ed25519.verify(mallory.publicKey(), message, signature)).isFalse();
        byte[] flipped = signature.clone();
        flipped[10] ^= 1;
        assertThat(Ed25519.verify(alice.publicKey(), message, flipped)).isFalse();
        assertThat(Ed25519.verify(alice.publicKey(), message, new byte[3])).isFalse();
        assertThat(Ed25519.verify(new byte[5], message, signature)).isFalse();
    }

    @Test
    void rawKeysRoundTripThroughTheJdkForm() {
        NodeIdentity id = NodeIdentity.ephemeral();
        assertThat(Ed25519.raw(id.jdkPublicKey())).isEqualTo(id.publicKey());
        assertThat(Ed25519.fromHex(id.publicKeyHex())).isEqualTo(id.publicKey());
    }
}
