package io.butterfly.discovery.admission;

/**
 * What a JOIN_REQUEST asks (docs/bootstrap-protocol.md §3.2).
 *
 * @param clusterName the cluster the node means to join
 * @param member      the node as it asks to be listed
 * @param publicKey   the raw Ed25519 key the request is signed with
 * @param features    the protocol feature bits the node supports
 */
public record Join(String clusterName, Candidate member, byte[] publicKey, long features) {
}
