package io.butterfly.common.grpc;

import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.PeerIdentity;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Puts the {@link Caller} into each call's {@link Context}: the identity the peer's certificate names, read from
 * the TLS session the transport authenticated (never from anything the caller sends). Services ask
 * {@link #current()} before doing what a message asks for a node.
 */
public final class CallerInterceptor implements ServerInterceptor {

    private static final Context.Key<Caller> CALLER = Context.key("butterfly-caller");

    private final boolean tls;

    /** @param tls whether the server speaks mutual TLS; if not, every caller is {@link Caller#PLAINTEXT} */
    public CallerInterceptor(boolean tls) {
        this.tls = tls;
    }

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Caller caller = tls ? identify(call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION)) : Caller.PLAINTEXT;
        return Contexts.interceptCall(Context.current().withValue(CALLER, caller), call, headers, next);
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
