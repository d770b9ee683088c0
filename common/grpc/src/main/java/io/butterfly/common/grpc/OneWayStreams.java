package io.butterfly.common.grpc;

import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Long-lived client-streaming calls, one per peer address, for one-way messages on a hot path: a message
 * costs one HTTP/2 DATA frame instead of a whole call (headers, a new stream, a reply), which on a
 * loopback pipeline hop is the larger part of the latency.
 *
 * <p>A stream that breaks (the peer died or closed it) is dropped and reopened by the next send. Because
 * nothing is acknowledged, the keys of the last few messages sent on it are handed to {@code onBroken}, so
 * their senders can be told at once instead of waiting for a timeout; telling about a message that did
 * get through is harmless to a receiver that matches outcomes to what it still waits for.
 *
 * @param <T> message type
 * @param <K> what identifies a message to {@code onBroken}
 */
public final class OneWayStreams<T, K> {

    /** Keys of recently sent messages remembered per stream. */
    private static final int REMEMBERED = 16;
    private static final Logger log = LoggerFactory.getLogger(OneWayStreams.class);

    /** Called when a stream breaks with the keys of its last messages and the reason. */
    public interface BrokenHandler<K> {
        void onBroken(String address, List<K> recent, Status status);
    }

    /** The caller's long-lived channel to a peer. */
    public interface Channels {
        ManagedChannel get(String host, int port);
    }

    private final Channels channels;
    private final BiFunction<ManagedChannel, StreamObserver<Object>, StreamObserver<T>> opener;
    private final Function<T, K> keyOf;
    private final BrokenHandler<K> onBroken;
    private final Map<String, Stream> streams = new ConcurrentHashMap<>();

    /**
     * @param channels the caller's channel per peer
     * @param opener   starts the client-streaming call on a channel, e.g. {@code (ch, r) -> Stub.newStub(ch).steps(r)}
     * @param keyOf    what to remember of each message
     * @param onBroken told when a stream breaks
     */
    public OneWayStreams(Channels channels, BiFunction<ManagedChannel, StreamObserver<Object>, StreamObserver<T>> opener,
                         Function<T, K> keyOf, BrokenHandler<K> onBroken) {
        this.channels = channels;
        this.opener = opener;
        this.keyOf = keyOf;
        this.onBroken = onBroken;
    }

    /**
     * Writes one message to the peer's stream, opening it if needed.
     *
     * @throws StatusRuntimeException UNAVAILABLE if the stream cannot take the message
     */
    public void send(String host, int port, T message) {
        String address = host + ":" + port;
        Stream stream = null;
        try {
            stream = streams.computeIfAbsent(address, a -> open(a, host, port));
            stream.send(message);
        } catch (RuntimeException e) {
            if (stream != null) {
                streams.remove(address, stream);
            }
            throw Status.UNAVAILABLE.withDescription("stream to " + address + " failed: " + e.getMessage())
                    .withCause(e).asRuntimeException();
        }
    }

    /**
     * The answer observer a generated {@code newStub(ch).call(responses)} wants, from the untyped one the
     * opener gets: the one answer only comes when the stream ends, and nothing reads it.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <A> StreamObserver<A> answers(StreamObserver<Object> responses) {
        return (StreamObserver) responses;
    }

    /** Ends every stream (on shutdown). */
    public void closeAll() {
        streams.values().forEach(Stream::close);
        streams.clear();
    }

    private Stream open(String address, String host, int port) {
        Stream stream = new Stream(address);
        stream.requests = opener.apply(channels.get(host, port), stream);
        return stream;
    }

    private final class Stream implements StreamObserver<Object> {
        private final String address;
        private final ArrayDeque<K> recent = new ArrayDeque<>(REMEMBERED);
        private StreamObserver<T> requests;
        private boolean broken;

        Stream(String address) {
            this.address = address;
        }

        synchronized void send(T message) {
            if (broken) {
                throw new IllegalStateException("stream already broken");
            }
            if (recent.size() == REMEMBERED) {
                recent.removeFirst();
            }
            recent.addLast(keyOf.apply(message));
            requests.onNext(message);
        }

        synchronized void close() {
            if (!broken) {
                broken = true;
                requests.onCompleted();
            }
        }

        @Override
        public void onNext(Object closedAnswer) {
            // The peer answers only when the stream ends.
        }

        @Override
        public void onError(Throwable t) {
            List<K> lost;
            synchronized (this) {
                broken = true;
                lost = new ArrayList<>(recent);
                recent.clear();
            }
            streams.remove(address, this);
            Status status = Status.fromThrowable(t);
            log.debug("stream to {} broke: {}", address, status);
            onBroken.onBroken(address, lost, status);
        }

        @Override
        public void onCompleted() {
            synchronized (this) {
                broken = true;
            }
            streams.remove(address, this);
        }
    }
}
