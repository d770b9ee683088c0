package io.butterfly.common.hash;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;

/**
 * Binary Merkle tree over leaf digests (docs/initialization-and-bootstrap.md §4.5): leaves are
 * SHA-256(0x00 || leaf), inner nodes SHA-256(0x01 || left || right) (domain separation so a leaf
 * cannot pose as a node); an odd node is promoted unchanged to the next level.
 */
public final class MerkleTree {

    private MerkleTree() {
    }

    public static byte[] root(List<byte[]> leaves) {
        if (leaves.isEmpty()) {
            return Sha256.digest(new byte[0]);
        }
        List<byte[]> level = new ArrayList<>(leaves.size());
        for (byte[] leaf : leaves) {
            level.add(hash((byte) 0, leaf, null));
        }
        while (level.size() > 1) {
            List<byte[]> next = new ArrayList<>((level.size() + 1) / 2);
            for (int i = 0; i < level.size(); i += 2) {
                next.add(i + 1 < level.size() ? hash((byte) 1, level.get(i), level.get(i + 1)) : level.get(i));
            }
            level = next;
        }
        return level.get(0);
    }

    /** Root over hex-encoded leaf digests, hex-encoded. */
    public static String rootHex(List<String> hexLeaves) {
        List<byte[]> leaves = new ArrayList<>(hexLeaves.size());
        for (String h : hexLeaves) {
            leaves.add(Sha256.fromHex(h));
        }
        return Sha256.toHex(root(leaves));
    }

    private static byte[] hash(byte prefix, byte[] a, byte[] b) {
        MessageDigest d = Sha256.newDigest();
        d.update(prefix);
        d.update(a);
        if (b != null) {
            d.update(b);
        }
        return d.digest();
    }
}
