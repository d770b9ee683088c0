package io.butterfly.common.grpc;

import io.butterfly.proto.worker.v1.StreamClosed;
import io.grpc.stub.StreamObserver;
import java.util.function.Consumer;

/**
 * The receiving end of a one-way stream ({@link OneWayStreams}): each message goes to {@code handler} in
 * arrival order; the single answer, when the sender closes the stream, is how many arrived. A sender that
 * goes away needs nothing here: whatever it waits for fails on its side (broken stream, or timeout).
 */
public final class OneWayReceiver<T> implements StreamObserver<T> {

    private final Consumer<T> handler;
    private final StreamObserver<StreamClosed> closed;
    private long received;

    private OneWayReceiver(Consumer<T> handler, StreamObserver<StreamClosed> closed) {
        this.handler = handler;
        this.closed = closed;
    }

    public static <T> StreamObserver<T> of(Consumer<T> handler, StreamObserver<StreamClosed> closed) {
        return new OneWayReceiver<>(handler, closed);
    }

    @Override
    public void onNext(T message) {
        received++;
        handler.accept(message);
    }

    @Override
    public void onError(Throwable t) {
        // the sender went away
    }

    @Override
    public void onCompleted() {
        closed.onNext(StreamClosed.newBuilder().setMessages(received).build());
        closed.onCompleted();
    }
}
