package io.butterfly.common.identity;

import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Who a node is, as its certificate from the cluster CA says: a role and a node id, written as one DNS name among
 * the certificate's subject alternative names, {@code <node-id>.<role>.butterfly.internal}.
 *
 * <p>A DNS name rather than a URI (SPIFFE's {@code spiffe://...}) because the Helm chart issues its certificates with
 * Helm's own {@code genSignedCert}, which writes DNS and IP names only. So a node id that has a certificate is a DNS
 * label: lowercase letters, digits and '-', at most 63 characters (pod names and the launcher's ids are). The name
 * lives under {@code .internal}, which no public DNS name ends with, and only the cluster CA issues it.
 */
public record PeerIdentity(NodeRole role, String nodeId) {

    public static final String SUFFIX = ".butterfly.internal";
    private static final Pattern LABEL = Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?");
    /** The dNSName type of a subject alternative name (RFC 5280, GeneralName). */
    private static final int DNS_NAME = 2;

    public PeerIdentity {
        if (role == null) {
            throw new IllegalArgumentException("a node identity needs a role");
        }
        if (!isValidNodeId(nodeId)) {
            throw new IllegalArgumentException("node id '" + nodeId + "' cannot be named in a certificate: use"
                    + " lowercase letters, digits and '-' (a DNS label, at most 63 characters)");
        }
    }

    public static boolean isValidNodeId(String nodeId) {
        return nodeId != null && LABEL.matcher(nodeId).matches();
    }

    /** The subject alternative name that carries this identity. */
    public String dnsName() {
        return nodeId + "." + role.label() + SUFFIX;
    }

    /** The identity a DNS name carries; empty for any other name (a host name, say). */
    public static Optional<PeerIdentity> parse(String dnsName) {
        String name = dnsName.toLowerCase(Locale.ROOT);
        if (!name.endsWith(SUFFIX)) {
            return Optional.empty();
        }
        String[] labels = name.substring(0, name.length() - SUFFIX.length()).split("\\.", -1);
        if (labels.length != 2 || !isValidNodeId(labels[0])) {
            return Optional.empty();
        }
        return NodeRole.ofLabel(labels[1]).map(role -> new PeerIdentity(role, labels[0]));
    }

    /**
     * The identity a certificate names; empty when it names none, or more than one (an ambiguous certificate
     * speaks for nobody).
     */
    public static Optional<PeerIdentity> of(X509Certificate certificate) {
        Collection<List<?>> names;
        try {
            names = certificate.getSubjectAlternativeNames();
        } catch (CertificateParsingException e) {
            return Optional.empty();
        }
        if (names == null) {
            return Optional.empty();
        }
        List<PeerIdentity> found = names.stream()
                .filter(n -> n.size() == 2 && n.get(0) instanceof Integer type && type == DNS_NAME)
                .map(n -> parse(String.valueOf(n.get(1))))
                .flatMap(Optional::stream).distinct().toList();
        return found.size() == 1 ? Optional.of(found.get(0)) : Optional.empty();
    }

    @Override
    public String toString() {
        return role.label() + " '" + nodeId + "'";
    }
}
