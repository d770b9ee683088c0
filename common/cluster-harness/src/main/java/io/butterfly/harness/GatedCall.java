package io.butterfly.harness;

import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A call from one node to another through the harness's network. While the link is open it is the call itself; while
 * either end is paused its messages wait, both ways; once the link is cut (a node killed or isolated) it ends with
 * UNAVAILABLE, as a call over a connection to a dead peer does, and whatever the caller still sends is dropped.
 */
final class GatedCall<Q, R> extends ClientCall<Q, R> {

    private static final Logger log = LoggerFactory.getLogger(GatedCall.class);

    private final ClientCall<Q, R> call;
    private final InProcessNetwork network;
    final String from;
    final String to;
    /**
     * Where the caller is told what the network makes up or held back: the call's own executor, as gRPC tells it
     * everything (a blocking stub waits on its executor, not on the answer itself), or the network's.
     */
    private final Executor callbacks;
    private final Valve out = new Valve();
    private final Valve in = new Valve();
    private volatile boolean cut;
    private volatile boolean started;
    private Listener<R> listener;
    private boolean closed;

    GatedCall(ClientCall<Q, R> call, InProcessNetwork network, String from, String to, Executor callbacks) {
        this.call = call;
        this.network = network;
        this.from = from;
        this.to = to;
        this.callbacks = callbacks;
    }

    @Override
    public void start(Listener<R> responses, Metadata headers) {
        this.listener = responses;
        network.track(this);
        if (!network.connected(from, to)) {
            sever();
            return;
        }
        out.pass(() -> {
            started = true;
            call.start(new Responses(), headers);
        }, open());
    }

    @Override
    public void request(int numMessages) {
        if (!cut) {
            out.pass(() -> call.request(numMessages), open());
        }
    }

    @Override
    public void cancel(String message, Throwable cause) {
        if (!cut) {
            out.pass(() -> call.cancel(message, cause), open());
        }
    }

    @Override
    public void halfClose() {
        if (!cut) {
            out.pass(call::halfClose, open());
        }
    }

    @Override
    public void sendMessage(Q message) {
        if (!cut) {
            out.pass(() -> call.sendMessage(message), open());
        }
    }

    @Override
    public boolean isReady() {
        return !cut && call.isReady();
    }

    @Override
    public void setMessageCompression(boolean enabled) {
        call.setMessageCompression(enabled);
    }

    private boolean open() {
        return !network.held(from, to);
    }

    /** The link opened again: what waited goes through (the answers on the caller's executor). */
    void release() {
        out.release(this::open);
        callbacks.execute(() -> in.release(this::open));
    }

    /** The link is cut: the call ends with UNAVAILABLE on the caller's side and is cancelled on the other. */
    void sever() {
        if (cut) {
            return;
        }
        cut = true;
        out.drop();
        in.drop();
        if (started) {
            try {
                call.cancel("the harness cut the link " + from + " -> " + to, null);
            } catch (RuntimeException e) {
                // grpc-java's in-process stream throws (an NPE) when cancelled before the server has taken it up; the
                // call is over for the caller either way, and a cut must never fail the harness (nor its close)
                log.debug("cancelling {} -> {} as the link was cut: {}", from, to, e.toString());
            }
        }
        callbacks.execute(() -> close(Status.UNAVAILABLE.withDescription(
                "link " + from + " -> " + to + " cut (" + network.describe(from, to) + ")"), new Metadata()));
    }

    /** Tells the caller, unless the call was closed meanwhile (a cut races with the answers). */
    private synchronized void deliver(Runnable callback) {
        if (!closed) {
            callback.run();
        }
    }

    private synchronized void close(Status status, Metadata trailers) {
        if (!closed) {
            closed = true;
            network.untrack(this);
            listener.onClose(status, trailers);
        }
    }

    /** The answers, through the same gate the other way. */
    private final class Responses extends Listener<R> {

        @Override
        public void onHeaders(Metadata headers) {
            if (!cut) {
                in.pass(() -> deliver(() -> listener.onHeaders(headers)), open());
            }
        }

        @Override
        public void onMessage(R message) {
            if (!cut) {
                in.pass(() -> deliver(() -> listener.onMessage(message)), open());
            }
        }

        @Override
        public void onReady() {
            if (!cut) {
                in.pass(() -> deliver(listener::onReady), open());
            }
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            if (!cut) { // once cut, the caller is told UNAVAILABLE by sever, not the cancellation it caused
                in.pass(() -> close(status, trailers), open());
            }
        }
    }
}
