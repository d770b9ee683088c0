package io.butterfly.common.grpc;

import io.butterfly.common.identity.NodeRole;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Who may call each method of one gRPC service, by the role the caller's certificate names: the one table the
 * service's calls are authorized by ({@link CallerInterceptor} checks it before a call reaches its handler). Every
 * method has an entry, so a method added without one fails the service's start, not open. What depends on a message
 * (a report that speaks for one node, a signed envelope, a step of a given pipeline) is checked by its handler, on top.
 */
public final class CallerRoles {

    /** Any caller the transport accepted (a certificate of the cluster CA): the message itself is checked. */
    private static final Set<NodeRole> ANY = Set.of();

    private final String service;
    private final Map<String, Set<NodeRole>> byMethod;

    private CallerRoles(String service, Map<String, Set<NodeRole>> byMethod) {
        this.service = service;
        this.byMethod = Map.copyOf(byMethod);
    }

    /** The table of {@code service}: each of its methods must be given an entry. */
    public static Builder of(ServiceDescriptor service) {
        return new Builder(service);
    }

    /** The service's full name ({@code butterfly.worker.v1.WorkerService}). */
    public String service() {
        return service;
    }

    /**
     * The roles that may call {@code fullMethodName} (empty: any caller); null when the table has no entry for it (a
     * method of another service, or one the generated code gained after the table was built).
     */
    public Set<NodeRole> rolesFor(String fullMethodName) {
        return byMethod.get(fullMethodName);
    }

    /** Builds a table; {@link #build} refuses one that leaves a method out. */
    public static final class Builder {

        private final ServiceDescriptor service;
        private final Map<String, Set<NodeRole>> byMethod = new LinkedHashMap<>();

        private Builder(ServiceDescriptor service) {
            this.service = service;
        }

        /** {@code method} is taken only from callers whose certificate names one of {@code roles}. */
        public Builder allow(MethodDescriptor<?, ?> method, NodeRole first, NodeRole... more) {
            return put(method, EnumSet.of(first, more));
        }

        /** {@code method} is taken from any caller the transport accepted; its handler checks the message. */
        public Builder anyCaller(MethodDescriptor<?, ?> method) {
            return put(method, ANY);
        }

        private Builder put(MethodDescriptor<?, ?> method, Set<NodeRole> roles) {
            if (!service.getMethods().contains(method)) {
                throw new IllegalArgumentException(method.getFullMethodName() + " is not a method of " + service.getName());
            }
            if (byMethod.putIfAbsent(method.getFullMethodName(),
                    roles.isEmpty() ? ANY : Collections.unmodifiableSet(EnumSet.copyOf(roles))) != null) {
                throw new IllegalArgumentException(method.getFullMethodName() + " has two entries");
            }
            return this;
        }

        public CallerRoles build() {
            List<String> missing = service.getMethods().stream().map(MethodDescriptor::getFullMethodName)
                    .filter(m -> !byMethod.containsKey(m)).sorted().toList();
            if (!missing.isEmpty()) {
                throw new IllegalStateException("who may call " + missing + " is not said: every method of "
                        + service.getName() + " needs an entry in its caller table");
            }
            return new CallerRoles(service.getName(), byMethod);
        }
    }
}
