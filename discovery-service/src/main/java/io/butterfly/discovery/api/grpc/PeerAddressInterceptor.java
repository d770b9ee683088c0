package io.butterfly.discovery.api.grpc;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * Puts the caller's transport address into the call's {@link Context}, where the join rate limit reads it.
 * Taken from the transport (never from anything the caller sends) so a client cannot choose its bucket;
 * the port is dropped because every new connection gets a fresh one.
 */
public class PeerAddressInterceptor implements ServerInterceptor {

    public static final Context.Key<String> PEER_HOST = Context.key("butterfly-peer-host");

    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers, ServerCallHandler<Q, R> next) {
        Context ctx = Context.current().withValue(PEER_HOST, hostOf(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR)));
        return Contexts.interceptCall(ctx, call, headers, next);
    }

    static String hostOf(SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            return inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString();
        }
        return address == null ? "unknown" : address.toString();
    }

    /** The current call's peer host ("unknown" outside a call). */
    public static String currentPeerHost() {
        String host = PEER_HOST.get();
        return host == null ? "unknown" : host;
    }
}
