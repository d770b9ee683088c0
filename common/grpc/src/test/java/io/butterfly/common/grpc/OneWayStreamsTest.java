package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.worker.v1.StepOutcome;
import io.butterfly.proto.worker.v1.StreamClosed;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** One-way streams over a real (in-process) gRPC transport: delivery in order, reopening, loss reports. */
class OneWayStreamsTest {

    private final String name = InProcessServerBuilder.generateName();
    private final LinkedBlockingQueue<StepOutcome> received = new LinkedBlockingQueue<>();
    private final List<String> brokenKeys = new CopyOnWriteArrayList<>();
    private final CountDownLatch broke = new CountDownLatch(1);
    /** The server breaks a stream when it receives a message with this task id. */
    private static final String POISON = "poison";
    private Server server;
    private ManagedChannel channel;

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.shutdownNow();
    }

    private OneWayStreams<StepOutcome, String> start() throws Exception {
        server = InProcessServerBuilder.forName(name).directExecutor().addService(new CoordinatorServiceGrpc.CoordinatorServiceImplBase() {
            @Override
            public StreamObserver<StepOutcome> stepOutcomes(StreamObserver<StreamClosed> closed) {
                return new StreamObserver<>() {
                    @Override
                    public void onNext(StepOutcome o) {
                        if (o.getTaskId().equals(POISON)) {
                            closed.onError(Status.UNAVAILABLE.withDescription("peer gone").asRuntimeException());
                        } else {
                            received.add(o);
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                    }

                    @Override
                    public void onCompleted() {
                        closed.onNext(StreamClosed.getDefaultInstance());
                        closed.onCompleted();
                    }
                };
            }
        }).build().start();
        channel = InProcessChannelBuilder.forName(name).directExecutor().build();
        return new OneWayStreams<>((host, port) -> channel,
                (ch, r) -> CoordinatorServiceGrpc.newStub(ch).stepOutcomes(OneWayStreams.answers(r)),
                StepOutcome::getTaskId,
                (address, recent, status) -> {
                    brokenKeys.addAll(recent);
                    broke.countDown();
                });
    }


    private static StepOutcome outcome(String task, int step) {
        return StepOutcome.newBuilder().setTaskId(task).setStep(step).build();
    }

    @Test
    void deliversMessagesInOrderOnOneStream() throws Exception {
        OneWayStreams<StepOutcome, String> streams = start();
        for (int i = 0; i < 50; i++) {
            streams.send("peer", 1, outcome("t", i));
        }
        for (int i = 0; i < 50; i++) {
            assertThat(received.poll(5, TimeUnit.SECONDS).getStep()).isEqualTo(i);
        }
        streams.closeAll();
    }

    @Test
    void aBrokenStreamReportsItsRecentMessagesAndTheNextSendReopens() throws Exception {
        OneWayStreams<StepOutcome, String> streams = start();
        streams.send("peer", 1, outcome("a", 0));
        streams.send("peer", 1, outcome("b", 0));
        streams.send("peer", 1, outcome(POISON, 0));
        assertThat(broke.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(brokenKeys).containsExactly("a", "b", POISON);

        streams.send("peer", 1, outcome("after", 1));
        assertThat(received.poll(5, TimeUnit.SECONDS).getTaskId()).isEqualTo("a");
        assertThat(received.poll(5, TimeUnit.SECONDS).getTaskId()).isEqualTo("b");
        assertThat(received.poll(5, TimeUnit.SECONDS).getTaskId()).isEqualTo("after");
        streams.closeAll();
    }
}
