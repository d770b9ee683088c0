package io.butterfly.common.grpc;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.StatusRuntimeException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Authorizes each call, once, before it reaches its handler: the {@link Caller} is the identity the peer's certificate
 * names, read from the TLS session the transport authenticated (never from anything the caller sends), and the
 * method's entry in its service's {@link CallerRoles} table says which roles may call it. A call the table refuses
 * ends PERMISSION_DENIED; one it lets through carries its caller in its {@link Context}, which handlers ask
 * ({@link #current()}) for what depends on the message (a report for one node, a signed envelope).
 */
public final class CallerInterceptor implements ServerInterceptor {

    private static final Context.Key<Caller> CALLER = Context.key("butterfly-caller");

    private final boolean tls;
    private final Map<String, CallerRoles> tables;

    /**
     * Checks every call by {@link CallerTables}.
     *
     * @param tls whether the server speaks mutual TLS; if not, every caller is {@link Caller#PLAINTEXT}
     */
    public CallerInterceptor(boolean tls) {
        this(tls, CallerTables.all());
    }

    /**
     * @param tables the caller tables to check by; a service of Butterfly's packages without one is refused, any other
     *               (gRPC's health and reflection) passes unchecked
     */
    public CallerInterceptor(boolean tls, Collection<CallerRoles> tables) {
        this.tls = tls;
        this.tables = tables.stream().collect(Collectors.toUnmodifiableMap(CallerRoles::service, Function.identity()));
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Caller caller = tls ? identify(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION)) : Caller.PLAINTEXT;
        try {
            authorize(caller, call.getMethodDescriptor().getServiceName(), call.getMethodDescriptor().getFullMethodName());
        } catch (ButterflyException refused) {
            StatusRuntimeException status = GrpcErrors.toStatus(refused);
            call.close(status.getStatus(), status.getTrailers() == null ? new Metadata() : status.getTrailers());
            return new ServerCall.Listener<>() {
            };
        }
        return Contexts.interceptCall(Context.current().withValue(CALLER, caller), call, headers, next);
    }

    /**
     * Throws (PERMISSION_DENIED) when the caller table of {@code service} does not let {@code caller} call
     * {@code method} (a full method name).
     */
    public void authorize(Caller caller, String service, String method) {
        if (!caller.authenticated()) {
            return; // TLS off: nothing is known of the caller
        }
        CallerRoles table = tables.get(service);
        if (table == null && !service.startsWith(CallerTables.BUTTERFLY_PACKAGE)) {
            return; // not a service of ours: gRPC's health and reflection
        }
        Set<NodeRole> roles = table == null ? null : table.rolesFor(method);
        if (roles == null) {
            throw new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.PERMISSION_DENIED,
                    method + " refused: the caller table (CallerTables) does not name it");
        }
        if (!roles.isEmpty()) {
            caller.requireRole(method.substring(method.lastIndexOf('.') + 1), roles.toArray(NodeRole[]::new));
        }
    }

    static Caller identify(SSLSession session) {
        if (session == null) {
            return Caller.UNIDENTIFIED;
        }
        try {
            Certificate[] chain = session.getPeerCertificates();
            return chain.length > 0 && chain[0] instanceof X509Certificate cert
                    ? PeerIdentity.of(cert).map(Caller::certified).orElse(Caller.UNIDENTIFIED) : Caller.UNIDENTIFIED;
        } catch (SSLPeerUnverifiedException e) {
            return Caller.UNIDENTIFIED;
        }
    }

    /**
     * The caller of the current call. Outside any intercepted call (an in-process test server, which has no
     * transport to authenticate anything) it is {@link Caller#PLAINTEXT}; every service's network server has this
     * interceptor (the TLS auto-configuration registers it with the TLS bundle itself).
     */
    public static Caller current() {
        Caller caller = CALLER.get();
        return caller == null ? Caller.PLAINTEXT : caller;
    }
}
