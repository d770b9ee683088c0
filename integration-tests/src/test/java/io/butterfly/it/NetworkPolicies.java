package io.butterfly.it;

import static io.butterfly.it.ChartManifests.at;

import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Whether rendered NetworkPolicies let one pod connect to another, as Kubernetes decides it: a connection needs the
 * source's egress and the destination's ingress allowed; a direction is allowed when no policy of that type selects
 * the pod, or one that does has a rule whose peers and ports match. Covers what the chart uses: {@code matchLabels}
 * selectors, pod and namespace peers, ports by name or number.
 */
final class NetworkPolicies {

    /**
     * One end of a connection.
     *
     * @param namespace       the pod's namespace
     * @param namespaceLabels its namespace's labels
     * @param labels          the pod's labels
     * @param ports           its container ports, name to number
     */
    record Pod(String namespace, Map<String, String> namespaceLabels, Map<String, String> labels, Map<String, Integer> ports) {
    }

    private final List<Map<String, Object>> policies;
    private final String namespace;

    /** @param namespace where the policies live (the release's namespace) */
    NetworkPolicies(List<Map<String, Object>> policies, String namespace) {
        this.policies = policies;
        this.namespace = namespace;
    }

    /** Whether {@code from} may connect to {@code to} on its port {@code port} (a name of its, or a number). */
    boolean allows(Pod from, Pod to, String port, String protocol) {
        int number = to.ports().getOrDefault(port, port.matches("\\d+") ? Integer.parseInt(port) : -1);
        return allowed(from, "Egress", "egress", "to", to, port, number, protocol)
                && allowed(to, "Ingress", "ingress", "from", from, port, number, protocol);
    }

    @SuppressWarnings("unchecked")
    private boolean allowed(Pod subject, String type, String rulesKey, String peersKey, Pod peer, String portName,
                            int port, String protocol) {
        boolean selected = false;
        for (Map<String, Object> policy : policies) {
            if (!namespace.equals(subject.namespace()) || !types(policy).contains(type)
                    || !matches((Map<String, Object>) at(policy, "spec", "podSelector"), subject.labels())) {
                continue;
            }
            selected = true;
            for (Map<String, Object> rule : (List<Map<String, Object>>) Objects.requireNonNullElse(
                    at(policy, "spec", rulesKey), List.of())) {
                if (peersMatch((List<Map<String, Object>>) rule.get(peersKey), peer)
                        && portsMatch((List<Map<String, Object>>) rule.get("ports"), portName, port, protocol)) {
                    return true;
                }
            }
        }
        return !selected;
    }

    @SuppressWarnings("unchecked")
    private static List<String> types(Map<String, Object> policy) {
        return (List<String>) Objects.requireNonNullElse(at(policy, "spec", "policyTypes"), List.of("Ingress"));
    }

    @SuppressWarnings("unchecked")
    private boolean peersMatch(List<Map<String, Object>> peers, Pod peer) {
        if (peers == null || peers.isEmpty()) {
            return true;
        }
        for (Map<String, Object> p : peers) {
            Map<String, Object> pods = (Map<String, Object>) p.get("podSelector");
            Map<String, Object> namespaces = (Map<String, Object>) p.get("namespaceSelector");
            if (p.containsKey("ipBlock")) {
                continue; // the chart names no address ranges
            }
            boolean namespaceOk = namespaces == null ? namespace.equals(peer.namespace())
                    : matches(namespaces, peer.namespaceLabels());
            if (namespaceOk && (pods == null || matches(pods, peer.labels()))) {
                return true;
            }
        }
        return false;
    }

    private static boolean portsMatch(List<Map<String, Object>> ports, String name, int number, String protocol) {
        if (ports == null || ports.isEmpty()) {
            return true;
        }
        for (Map<String, Object> p : ports) {
            Object port = p.get("port");
            boolean protocolOk = protocol.equals(Objects.requireNonNullElse(p.get("protocol"), "TCP"));
            if (protocolOk && (port == null || port.equals(name) || port.equals(number))) {
                return true;
            }
        }
        return false;
    }

    /** An empty selector matches everything; otherwise every matchLabels entry must be among the labels. */
    @SuppressWarnings("unchecked")
    private static boolean matches(Map<String, Object> selector, Map<String, String> labels) {
        if (selector == null) {
            return true;
        }
        if (selector.containsKey("matchExpressions")) {
            throw new IllegalArgumentException("matchExpressions are not evaluated here: " + selector);
        }
        Map<String, Object> wanted = (Map<String, Object>) Objects.requireNonNullElse(selector.get("matchLabels"), Map.of());
        return wanted.entrySet().stream().allMatch(e -> String.valueOf(e.getValue()).equals(labels.get(e.getKey())));
    }
}
