package io.butterfly.it.inprocess;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.resource.v1.Resource;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

/**
 * The receiving end of OTLP over HTTP (what a collector does): the services export their spans here, in protobuf
 * ({@code POST /v1/traces}), and the test reads them back. The JDK's HTTP server and OpenTelemetry's own messages.
 */
final class OtlpReceiver implements AutoCloseable {

    /** One span as exported: ids in hex, its service and its attributes (as strings). */
    record ExportedSpan(String service, String traceId, String spanId, String parentSpanId, String name,
                        Map<String, String> attributes) {
    }

    private final HttpServer server;
    private final List<ExportedSpan> spans = new CopyOnWriteArrayList<>();

    OtlpReceiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/traces", exchange -> {
            try (InputStream body = exchange.getRequestBody()) {
                receive(ExportTraceServiceRequest.parseFrom(body));
                exchange.sendResponseHeaders(200, -1);
            } catch (IOException | RuntimeException e) {
                exchange.sendResponseHeaders(400, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    /** Where the services export to ({@code management.opentelemetry.tracing.export.otlp.endpoint}). */
    String endpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/traces";
    }

    List<ExportedSpan> spans(String traceId) {
        return spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
    }

    private void receive(ExportTraceServiceRequest request) {
        HexFormat hex = HexFormat.of();
        for (ResourceSpans rs : request.getResourceSpansList()) {
            String service = attributes(rs.getResource()).getOrDefault("service.name", "");
            for (ScopeSpans ss : rs.getScopeSpansList()) {
                ss.getSpansList().forEach(s -> spans.add(new ExportedSpan(service, hex.formatHex(s.getTraceId().toByteArray()),
                        hex.formatHex(s.getSpanId().toByteArray()), hex.formatHex(s.getParentSpanId().toByteArray()),
                        s.getName(), attributes(s.getAttributesList()))));
            }
        }
    }

    private static Map<String, String> attributes(Resource resource) {
        return attributes(resource.getAttributesList());
    }

    private static Map<String, String> attributes(List<KeyValue> values) {
        return values.stream().collect(Collectors.toMap(KeyValue::getKey, kv -> text(kv.getValue()), (a, b) -> b));
    }

    private static String text(AnyValue v) {
        return switch (v.getValueCase()) {
            case STRING_VALUE -> v.getStringValue();
            case INT_VALUE -> Long.toString(v.getIntValue());
            case BOOL_VALUE -> Boolean.toString(v.getBoolValue());
            case DOUBLE_VALUE -> Double.toString(v.getDoubleValue());
            default -> v.toString();
        };
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
