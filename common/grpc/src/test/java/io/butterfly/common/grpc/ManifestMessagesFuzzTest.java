package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.InvalidProtocolBufferException;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestCanonicalForm;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.manifest.ModelIds;
import io.butterfly.proto.registry.v1.ModelManifest;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Timeout;

/**
 * The registry's manifest message as a worker or coordinator receives it (docs/testing.md, fuzzing): any bytes that
 * protobuf reads as a {@link ModelManifest} map to a {@link Manifest} whose signed form survives the trip back to a
 * message, and verification either accepts it or refuses it with one of the protocol's codes, nothing else. Since no
 * fuzzer forges an Ed25519 signature, each input is also signed by the trusted publisher (as the registry signs what
 * it imports), so that what lies behind the signature check is reached: the model id, the file names and the Merkle
 * root. A manifest that passes is usable: every stage can tell which of its files it needs.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class ManifestMessagesFuzzTest {

    private static final NodeIdentity PUBLISHER = NodeIdentity.ephemeral();
    private static final ManifestVerifier VERIFIER = new ManifestVerifier(List.of(PUBLISHER.publicKeyHex()));
    private static final Set<ErrorCode> REFUSALS = Set.of(ErrorCode.UNTRUSTED_PUBLISHER, ErrorCode.INVALID_SIGNATURE,
            ErrorCode.INVALID_MANIFEST, ErrorCode.MERKLE_ROOT_MISMATCH);

    @FuzzTest(maxDuration = "30s")
    void anyManifestMessageIsVerifiedOrRefused(FuzzedDataProvider data) throws InvalidProtocolBufferException {
        boolean withTrueRoot = data.consumeBoolean();
        ModelManifest message;
        try {
            message = ModelManifest.parseFrom(data.consumeRemainingAsBytes());
        } catch (InvalidProtocolBufferException notAManifest) {
            return;
        }
        Manifest received = ManifestMessages.fromProto(message);
        assertThat(ManifestCanonicalForm.of(ManifestMessages.fromProto(ManifestMessages.toProto(received))))
                .isEqualTo(ManifestCanonicalForm.of(received));
        verifyOrRefuse(received); // as received: signed by nobody trusted

        Manifest signed = ManifestVerifier.sign(withTrueRoot ? withRootOfItsFiles(received) : received, PUBLISHER);
        if (verifyOrRefuse(signed)) {
            Manifest again = ManifestMessages.fromProto(ModelManifest.parseFrom(ManifestMessages.toProto(signed).toByteArray()));
            assertThat(VERIFIER.verify(again)).isEqualTo(signed);
        }
    }

    /** True if verified (and then usable), false if refused with a protocol code. */
    private static boolean verifyOrRefuse(Manifest m) {
        try {
            VERIFIER.verify(m);
        } catch (ButterflyException refused) {
            assertThat(refused.code()).isIn(REFUSALS);
            return false;
        }
        assertThat(ModelIds.isValid(m.modelId())).isTrue();
        Set<String> names = new HashSet<>();
        for (ManifestFile f : m.files()) {
            assertThat(names.add(f.name())).as("file %s listed twice", f.name()).isTrue();
            for (int start = 0; start <= 2; start++) {
                f.neededBy(start, start + 1, start == 0, start == 2);
            }
        }
        return true;
    }

    /** The manifest with the Merkle root of its files' checksums, where they are hex at all. */
    private static Manifest withRootOfItsFiles(Manifest m) {
        String root;
        try {
            root = MerkleTree.rootHex(m.files().stream().map(ManifestFile::checksum).toList());
        } catch (IllegalArgumentException notHex) {
            return m;
        }
        return new Manifest(m.modelId(), m.architecture(), m.version(), m.numLayers(), m.parameterCount(),
                m.hiddenSize(), m.vocabSize(), m.dtype(), m.files(), root, m.createdAtMs(), m.publisherKey(),
                m.signature());
    }
}
