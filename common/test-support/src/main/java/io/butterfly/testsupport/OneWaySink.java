package io.butterfly.testsupport;

import io.butterfly.proto.worker.v1.StreamClosed;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The receiving end of one of Butterfly's one-way streams (steps, step outcomes) for a test's fake peer: every
 * message is queued, and the sender's close is acknowledged with {@code StreamClosed} as a real peer does.
 * Use it as the body of the fake service's stream method: {@code return sink.open(closed);}.
 */
public final class OneWaySink<T> {

    private final BlockingQueue<T> received = new LinkedBlockingQueue<>();

    /** The observer for one incoming stream whose close is acknowledged on {@code closed}. */
    public StreamObserver<T> open(StreamObserver<StreamClosed> closed) {
        return new StreamObserver<>() {
            @Override
            public void onNext(T value) {
                received.add(value);
            }

            @Override
            public void onError(Throwable t) {
                // the sender broke the stream; what it sent is kept
            }

            @Override
            public void onCompleted() {
                closed.onNext(StreamClosed.getDefaultInstance());
                closed.onCompleted();
            }
        };
    }

    /** The next message received, waiting up to {@code seconds}; null if none came. */
    public T poll(long seconds) throws InterruptedException {
        return received.poll(seconds, TimeUnit.SECONDS);
    }

    public BlockingQueue<T> received() {
        return received;
    }
}
