package io.butterfly.common.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.TlsServerCredentials;
import io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 47, item 1: every gRPC method of every service in {@code proto/} has an entry in the one caller table, and the
 * one interceptor enforces it over real mutual TLS. The services are found by walking the generated proto classes
 * (every {@code *Grpc} class), not listed here, so a service or method added to {@code proto/} without an entry fails
 * this test; then each method is called once with the certificate of each role, and reaches its handler exactly when
 * its entry names the role. {@code WorkerService.Dismiss} from the registry's, discovery's or a worker's certificate
 * was answered OK before the table (it left the cluster DEGRADED).
 */
class EveryGrpcMethodHasACallerEntryTest {

    private static final ClusterCa CA = ClusterCa.create("test CA", Duration.ofDays(1));
    /** What the stand-in handlers answer: the call got past the interceptor. */
    private static final String REACHED = "handler reached";

    private static Server server;

    @BeforeAll
    static void serveEveryServiceOverMutualTls() throws IOException {
        ClusterTls tls = tlsOf(NodeRole.WORKER, "server-0");
        NettyServerBuilder builder = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0),
                TlsServerCredentials.newBuilder().keyManager(tls.keyManagers().getKeyManagers())
                        .trustManager(tls.trustManager(null))
                        .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE).build());
        for (ServiceDescriptor service : protoServices()) {
            builder.addService(ServerInterceptors.intercept(standIn(service), new CallerInterceptor(true)));
        }
        server = builder.build().start();
    }

    @AfterAll
    static void stop() {
        server.shutdownNow();
    }

    @Test
    void everyMethodOfEveryServiceInProtoHasAnEntry() {
        List<ServiceDescriptor> services = protoServices();
        assertThat(services).extracting(ServiceDescriptor::getName).as("the walk finds the services of proto/")
                .contains(WorkerServiceGrpc.SERVICE_NAME, "butterfly.coordinator.v1.CoordinatorService",
                        "butterfly.discovery.v1.DiscoveryService", "butterfly.registry.v1.ModelRegistry");
        Set<String> missing = new TreeSet<>();
        for (ServiceDescriptor service : services) {
            CallerRoles table = CallerTables.all().stream().filter(t -> t.service().equals(service.getName()))
                    .findFirst().orElse(null);
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                if (table == null || table.rolesFor(method.getFullMethodName()) == null) {
                    missing.add(method.getFullMethodName());
                }
            }
        }
        assertThat(missing).as("methods without an entry in CallerTables").isEmpty();
    }

    @Test
    void overMutualTlsEachMethodIsReachedOnlyByTheRolesItsEntryNames() {
        List<String> wrong = new ArrayList<>();
        int calls = 0;
        for (NodeRole role : NodeRole.values()) {
            ManagedChannel channel = GrpcChannels.open("127.0.0.1", server.getPort(), tlsOf(role, role.label() + "-7"));
            try {
                for (ServiceDescriptor service : protoServices()) {
                    CallerRoles table = CallerTables.all().stream().filter(t -> t.service().equals(service.getName()))
                            .findFirst().orElseThrow();
                    for (MethodDescriptor<?, ?> method : service.getMethods()) {
                        Set<NodeRole> roles = table.rolesFor(method.getFullMethodName());
                        boolean allowed = roles.isEmpty() || roles.contains(role);
                        Status status = callOnce(channel, method);
                        calls++;
                        boolean reached = status.getCode() == Status.Code.ABORTED && REACHED.equals(status.getDescription());
                        boolean refused = status.getCode() == Status.Code.PERMISSION_DENIED;
                        if (allowed ? !reached : !refused) {
                            wrong.add(method.getFullMethodName() + " from a " + role.label() + ": " + status);
                        }
                    }
                }
            } finally {
                GrpcChannels.close(channel);
            }
        }
        assertThat(wrong).isEmpty();
        assertThat(calls).isGreaterThanOrEqualTo(4 * 19);
    }

    @Test
    void dismissIsACoordinatorsToAsk() {
        for (NodeRole role : List.of(NodeRole.REGISTRY, NodeRole.DISCOVERY, NodeRole.WORKER)) {
            ManagedChannel channel = GrpcChannels.open("127.0.0.1", server.getPort(), tlsOf(role, role.label() + "-1"));
            try {
                Status status = callOnce(channel, WorkerServiceGrpc.getDismissMethod());
                assertThat(status.getCode()).as(role.label()).isEqualTo(Status.Code.PERMISSION_DENIED);
                assertThat(status.getDescription()).contains("Dismiss").contains("only from coordinator");
            } finally {
                GrpcChannels.close(channel);
            }
        }
    }

    /** Every service of {@code proto/}: the descriptor of each generated {@code *Grpc} class. */
    static List<ServiceDescriptor> protoServices() {
        List<ServiceDescriptor> services = new ArrayList<>();
        for (String name : protoClassNames()) {
            if (name.endsWith("Grpc")) {
                try {
                    services.add((ServiceDescriptor) Class.forName(name).getMethod("getServiceDescriptor").invoke(null));
                } catch (ReflectiveOperationException e) {
                    throw new AssertionError(name + " has no service descriptor", e);
                }
            }
        }
        return services;
    }

    /** The top-level classes of the proto artifact (a directory in the reactor, a jar otherwise). */
    private static List<String> protoClassNames() {
        Path location;
        try {
            location = Path.of(WorkerServiceGrpc.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
        List<String> entries = new ArrayList<>();
        try {
            if (Files.isDirectory(location)) {
                try (Stream<Path> files = Files.walk(location)) {
                    files.forEach(f -> entries.add(location.relativize(f).toString().replace('\\', '/')));
                }
            } else {
                try (JarFile jar = new JarFile(location.toFile())) {
                    for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                        entries.add(e.nextElement().getName());
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return entries.stream().filter(e -> e.startsWith("io/butterfly/proto/") && e.endsWith(".class") && !e.contains("$"))
                .map(e -> e.substring(0, e.length() - ".class".length()).replace('/', '.')).sorted().toList();
    }

    /** A service whose every method answers {@value #REACHED}: only the interceptor decides. */
    private static ServerServiceDefinition standIn(ServiceDescriptor service) {
        ServerServiceDefinition.Builder definition = ServerServiceDefinition.builder(service);
        for (MethodDescriptor<?, ?> method : service.getMethods()) {
            addStandIn(definition, method);
        }
        return definition.build();
    }

    private static <Q, R> void addStandIn(ServerServiceDefinition.Builder definition, MethodDescriptor<Q, R> method) {
        ServerCallHandler<Q, R> handler = (call, headers) -> {
            call.close(Status.ABORTED.withDescription(REACHED), new Metadata());
            return new io.grpc.ServerCall.Listener<>() {
            };
        };
        definition.addMethod(method, handler);
    }

    /** One call of {@code method} with its request's default message; its status. */
    @SuppressWarnings("unchecked")
    private static <Q, R> Status callOnce(ManagedChannel channel, MethodDescriptor<Q, R> method) {
        Q request = ((MethodDescriptor.PrototypeMarshaller<Q>) method.getRequestMarshaller()).getMessagePrototype();
        CompletableFuture<Status> closed = new CompletableFuture<>();
        ClientCall<Q, R> call = channel.newCall(method, CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS));
        call.start(new ClientCall.Listener<>() {
            @Override
            public void onClose(Status status, Metadata trailers) {
                closed.complete(status);
            }
        }, new Metadata());
        call.request(1);
        call.sendMessage(request);
        call.halfClose();
        try {
            return closed.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(method.getFullMethodName() + " did not end", e);
        }
    }

    private static ClusterTls tlsOf(NodeRole role, String id) {
        return CA.issue(new PeerIdentity(role, id), List.of("127.0.0.1", "localhost"), Duration.ofDays(1)).tls();
    }
}
