package io.butterfly.harness;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.PeerDialer;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The network between the nodes of an in-process cluster: each node's gRPC server is a grpc-java in-process server
 * named after the address it advertises ({@link #serverName}), and each node opens its channels through its own
 * {@link PeerDialer}, so every call between nodes knows which two nodes it links. That is where faults are made: a
 * node can be paused (its calls, both ways, wait until it resumes: a stopped process whose connections stay open),
 * isolated (every call to or from it ends with UNAVAILABLE, and new ones fail: a partition) or down (the same, for a
 * killed node, until it starts again).
 */
final class InProcessNetwork implements AutoCloseable {

    /** How a node is reached. */
    enum Reach {
        OPEN, PAUSED, ISOLATED, DOWN
    }

    private final Map<String, String> nodeAt = new ConcurrentHashMap<>();
    private final Map<String, Reach> reach = new ConcurrentHashMap<>();
    private final Set<GatedCall<?, ?>> calls = ConcurrentHashMap.newKeySet();
    /** The channels opened to each server name, so that a server's start can wake them ({@link #serverStarted}). */
    private final Map<String, Set<ManagedChannel>> channelsTo = new ConcurrentHashMap<>();
    /** Where the ends of cut calls are told when the call names no executor (never on the caller's thread in start). */
    private final ExecutorService callbacks = Executors.newCachedThreadPool(DaemonThreads.named("in-process-network"));

    /** The in-process server name of a node that advertises {@code host:port}. */
    static String serverName(String host, int port) {
        return host + ":" + port;
    }

    /** {@code node}'s gRPC server is the one advertised at {@code host:port}. */
    void register(String node, String host, int port) {
        nodeAt.put(serverName(host, port), node);
        reach.putIfAbsent(node, Reach.OPEN);
    }

    /** The channels {@code node} opens to its peers: in process, each call through the gate of its link. */
    PeerDialer dialerFor(String node) {
        return (host, port, interceptors) -> {
            String name = serverName(host, port);
            String peer = nodeAt.getOrDefault(name, name);
            List<ClientInterceptor> all = new ArrayList<>(interceptors);
            all.add(gate(node, peer)); // added last, called last: the gate is next to the transport
            ManagedChannel channel = InProcessChannelBuilder.forName(name)
                    .maxInboundMessageSize(GrpcChannels.MAX_MESSAGE_BYTES)
                    .intercept(all)
                    .build();
            Set<ManagedChannel> to = channelsTo.computeIfAbsent(name, n -> ConcurrentHashMap.newKeySet());
            to.removeIf(ManagedChannel::isShutdown); // a stopped service's channels
            to.add(channel);
            return channel;
        };
    }

    /**
     * The in-process server named {@code name} has started: every channel to it that found no server before (its
     * service not up yet, or killed) reconnects now. Without this a channel waits out grpc-java's reconnect backoff
     * (1 s, growing by 1.6 to 2 minutes), and calls that do not wait for ready fail with UNAVAILABLE meanwhile: a
     * worker's join to discovery started after it retried for seconds after discovery was up. Across processes
     * the first connection also waits for the backoff; here a start is an event the harness sees, so nothing waits
     * for a timer.
     */
    void serverStarted(String name) {
        Set<ManagedChannel> to = channelsTo.get(name);
        if (to == null) {
            return; // nobody has dialled it yet
        }
        to.removeIf(ManagedChannel::isShutdown);
        for (ManagedChannel channel : to) {
            channel.resetConnectBackoff();
        }
    }

    private ClientInterceptor gate(String from, String to) {
        InProcessNetwork network = this;
        return new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                Executor executor = options.getExecutor() != null ? options.getExecutor() : callbacks;
                return new GatedCall<>(next.newCall(method, options), network, from, to, executor);
            }
        };
    }

    /** Whether calls between the two can go through at all (neither isolated nor down). */
    boolean connected(String a, String b) {
        return reachable(a) && reachable(b);
    }

    /** Whether calls between the two wait (one of them is paused). */
    boolean held(String a, String b) {
        return reach(a) == Reach.PAUSED || reach(b) == Reach.PAUSED;
    }

    String describe(String a, String b) {
        return a + " " + reach(a).name().toLowerCase() + ", " + b + " " + reach(b).name().toLowerCase();
    }

    Reach reach(String node) {
        return reach.getOrDefault(node, Reach.OPEN);
    }

    private boolean reachable(String node) {
        Reach r = reach(node);
        return r != Reach.ISOLATED && r != Reach.DOWN;
    }

    /** {@code node}'s calls wait, both ways, until {@link #open}. */
    void pause(String node) {
        reach.put(node, Reach.PAUSED);
    }

    /** {@code node}'s calls end, and new ones fail, until {@link #open}. */
    void isolate(String node) {
        cut(node, Reach.ISOLATED);
    }

    /** As {@link #isolate}, for a node that was killed. */
    void down(String node) {
        cut(node, Reach.DOWN);
    }

    /** {@code node} is reachable again; what waited for it goes through. */
    void open(String node) {
        reach.put(node, Reach.OPEN);
        for (GatedCall<?, ?> call : calls) {
            if (call.from.equals(node) || call.to.equals(node)) {
                call.release();
            }
        }
    }

    private void cut(String node, Reach why) {
        reach.put(node, why);
        for (GatedCall<?, ?> call : calls) {
            if (call.from.equals(node) || call.to.equals(node)) {
                call.sever();
            }
        }
    }

    void track(GatedCall<?, ?> call) {
        calls.add(call);
    }

    void untrack(GatedCall<?, ?> call) {
        calls.remove(call);
    }

    @Override
    public void close() {
        callbacks.shutdownNow();
    }
}
