package io.butterfly.registry.api.grpc;

import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.catalog.ModelImporter;
import io.butterfly.registry.store.ModelStore;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;

/** Shared set-up of the transfer tests: a tiny model imported into a store, and recording interceptors. */
final class TransferFixtures {

    private TransferFixtures() {
    }

    /** The catalog over {@code <tmp>/store} with model "tiny" (a three-layer Llama, weights seeded with {@code seed}) imported. */
    static ModelCatalog importTiny(Path tmp, long seed) throws Exception {
        ModelFixtures.write(ModelFixtures.tinyLlama(true), seed, tmp.resolve("src/tiny"));
        ModelCatalog catalog = openStore(tmp);
        catalog.importModel(tmp.resolve("src/tiny"), null);
        return catalog;
    }

    /** A catalog over an existing {@code <tmp>/store} (what a restarted registry sees). */
    static ModelCatalog openStore(Path tmp) throws Exception {
        return new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));
    }

    /** Records every request message of type {@code type} the server receives. */
    static <T> ServerInterceptor recordRequests(Class<T> type, List<T> into) {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                              ServerCallHandler<Q, R> next) {
                return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
                    @Override
                    public void onMessage(Q message) {
                        if (type.isInstance(message)) {
                            into.add(type.cast(message));
                        }
                        super.onMessage(message);
                    }
                };
            }
        };
    }

    /** Records every response message of type {@code type} the server sends. */
    static <T> ServerInterceptor recordResponses(Class<T> type, List<T> into) {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                              ServerCallHandler<Q, R> next) {
                return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void sendMessage(R message) {
                        if (type.isInstance(message)) {
                            into.add(type.cast(message));
                        }
                        super.sendMessage(message);
                    }
                }, headers);
            }
        };
    }
}
