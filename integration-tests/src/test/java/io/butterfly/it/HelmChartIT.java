package io.butterfly.it;

import static io.butterfly.it.ChartManifests.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import io.butterfly.coordinator.config.ControlRaftProperties;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.config.EngineProperties;
import io.butterfly.coordinator.config.InvariantProperties;
import io.butterfly.coordinator.config.LivenessProperties;
import io.butterfly.coordinator.config.PlanningProperties;
import io.butterfly.discovery.config.DiscoveryProperties;
import io.butterfly.registry.config.RegistryProperties;
import io.butterfly.worker.config.RegistryClientProperties;
import io.butterfly.worker.config.WorkerProperties;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.BindContext;
import org.springframework.boot.context.properties.bind.BindHandler;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.yaml.snakeyaml.Yaml;

/**
 * The Helm chart (helm/butterfly) rendered by Helm itself (helm-java: Helm's Go library, no binary), and the
 * plain manifests in k8s/ that are its default rendering. Checks what a deployment depends on: probes on
 * the Actuator health groups the services expose, the ports the services are told to listen on, one Raft
 * peer per coordinator pod, the expected worker count, and that only the registry sees the private
 * publisher key.
 *
 * <p>After changing the chart: {@code ./mvnw -pl integration-tests test -Dtest=HelmChartIT
 * -Dbutterfly.k8s.write=true} rewrites k8s/butterfly.yaml.
 */
class HelmChartIT {

    private static final Path CHART = ChartManifests.CHART;

    private static final Path MANIFESTS = LocalCluster.ROOT.resolve("k8s/butterfly.yaml");
    private static final String MANIFESTS_HEADER = """
            # Generated: the Helm chart helm/butterfly rendered with its default values, release "butterfly" in
            # namespace "butterfly" (HelmChartIT checks it is up to date). For clusters without Helm:
            #   kubectl create namespace butterfly
            #   kubectl -n butterfly create secret generic butterfly-publisher --from-file=<dir from ./butterfly keygen>
            #   kubectl -n butterfly apply -f k8s/butterfly.yaml
            """;

    @Test
    void theChartLintsCleanInStrictMode() {
        LintResult result = new Helm(CHART).lint().strict().call();

        assertThat(result.isFailed()).as(String.join("\n", result.getMessages())).isFalse();
    }

    @Test
    void everyServiceIsProbedOnItsActuatorHealthGroupsAtThePortItListensOn() {
        List<Map<String, Object>> sets = kind(render(t -> t), "StatefulSet");

        assertThat(sets).extracting(s -> name(s)).containsExactlyInAnyOrder(
                "butterfly-discovery", "butterfly-registry", "butterfly-coordinator", "butterfly-worker");
        for (Map<String, Object> set : sets) {
            Map<String, Object> container = container(set);
            String http = arg(container, "--server.port");
            assertThat(port(container, "http")).as(name(set)).isEqualTo(Integer.parseInt(http));
            assertThat(port(container, "grpc")).as(name(set)).isEqualTo(Integer.parseInt(arg(container, "--spring.grpc.server.port")));
            assertThat(probePath(container, "startupProbe")).isEqualTo("/actuator/health/liveness");
            assertThat(probePath(container, "livenessProbe")).isEqualTo("/actuator/health/liveness");
            assertThat(probePath(container, "readinessProbe")).isEqualTo("/actuator/health/readiness");
            // Spring Boot's HTTP server binds loopback by default here (application.yaml): a probe from the
            // kubelet needs every interface.
            assertThat(env(container, "BUTTERFLY_BIND_ADDRESS")).isEqualTo("0.0.0.0");
            // Prometheus scrapes Actuator's endpoint on the same port.
            assertThat(at(set, "spec", "template", "metadata", "annotations")).as(name(set)).isEqualTo(Map.of(
                    "prometheus.io/scrape", "true", "prometheus.io/path", "/actuator/prometheus", "prometheus.io/port", http));
            // A pod that waits for the others must not keep them from starting.
            assertThat(at(set, "spec", "podManagementPolicy")).as(name(set))
                    .isEqualTo(name(set).endsWith("registry") ? null : "Parallel");
        }
    }

    /**
     * Spring ignores a property nobody binds, so a misspelt argument would deploy silently with the default
     * (say, a worker heartbeating 127.0.0.1): every {@code --butterfly.*} argument must bind to a property of
     * the service's own configuration records.
     */
    @Test
    void everyButterflyArgumentIsAPropertyOfItsService() {
        List<Map<String, Object>> docs = render(t -> t.set("consul.enabled", true).set("worker.memoryLimit", "8GB")
                .set("registry.sharedStoreClaim", "models").set("apiKeys.secretName", "keys"));
        Map<String, List<Class<?>>> records = Map.of(
                "butterfly-coordinator", List.of(CoordinatorProperties.class, ControlRaftProperties.class,
                        PlanningProperties.class, LivenessProperties.class, InvariantProperties.class,
                        EngineProperties.class, io.butterfly.coordinator.config.ApiKeysProperties.class),
                "butterfly-worker", List.of(WorkerProperties.class, RegistryClientProperties.class),
                "butterfly-registry", List.of(RegistryProperties.class, io.butterfly.registry.config.ApiKeysProperties.class),
                "butterfly-discovery", List.of(DiscoveryProperties.class));
        for (Map<String, Object> set : kind(docs, "StatefulSet")) {
            Map<String, String> args = new LinkedHashMap<>();
            for (Object a : (List<?>) container(set).get("args")) {
                String arg = String.valueOf(a);
                if (arg.startsWith("--butterfly.")) {
                    int eq = arg.indexOf('=');
                    args.put(arg.substring(2, eq), arg.substring(eq + 1));
                }
            }
            assertThat(args).as(name(set)).isNotEmpty();
            Set<String> bound = new HashSet<>();
            Binder binder = new Binder(new MapConfigurationPropertySource(args));
            BindHandler recordBound = new BindHandler() {
                @Override
                public Object onSuccess(ConfigurationPropertyName n, Bindable<?> target, BindContext context, Object result) {
                    bound.add(n.toString());
                    return result;
                }
            };
            for (Class<?> record : records.get(name(set))) {
                binder.bind(record.getAnnotation(ConfigurationProperties.class).value(), Bindable.of(record), recordBound);
            }
            assertThat(bound).as(name(set) + " arguments bound to its properties").containsAll(args.keySet());
        }
    }

    @Test
    void theServicesExposeTheProbeGroupsTheChartUses() throws IOException {
        for (String module : List.of("coordinator-service", "worker-service", "discovery-service", "model-registry-service")) {
            Map<String, Object> config = new Yaml().load(Files.readString(
                    LocalCluster.ROOT.resolve(module).resolve("src/main/resources/application.yaml")));
            assertThat(at(config, "management", "endpoint", "health", "probes", "enabled")).as(module).isEqualTo(true);
            assertThat(at(config, "server", "address")).as(module).isEqualTo("${BUTTERFLY_BIND_ADDRESS:127.0.0.1}");
            assertThat(String.valueOf(at(config, "management", "endpoints", "web", "exposure", "include")).split(","))
                    .as(module).contains("prometheus");
        }
    }

    /** Spares are more worker pods; the coordinators plan over the others and keep the spares on standby. */
    @Test
    void sparesAreWorkerPodsTheFirstPlanLeavesOut() {
        List<Map<String, Object>> docs = render(t -> t.set("worker.replicas", 3).set("worker.spares", 2));
        assertThat(at(named(docs, "StatefulSet", "butterfly-worker"), "spec", "replicas")).isEqualTo(5);
        assertThat(arg(container(named(docs, "StatefulSet", "butterfly-coordinator")),
                "--butterfly.coordinator.expected-workers")).isEqualTo("3");
    }

    @Test
    void coordinatorsFormOneRaftGroupOfTheirPodsAndWaitForEveryWorker() {
        List<Map<String, Object>> docs = render(t -> t.set("coordinator.replicas", 5).set("worker.replicas", 7));
        Map<String, Object> coordinator = container(named(docs, "StatefulSet", "butterfly-coordinator"));
        String headless = "butterfly-coordinator-pods.butterfly.svc.cluster.local";

        List<String> peers = Arrays.asList(arg(coordinator, "--butterfly.coordinator.raft.peers").split(","));
        assertThat(peers).hasSize(5);
        for (int i = 0; i < 5; i++) {
            // Peer ids are the pods' names, which are also their node ids ($(POD_NAME)).
            assertThat(peers.get(i)).isEqualTo("butterfly-coordinator-" + i + "=butterfly-coordinator-" + i + "." + headless + ":9070");
        }
        assertThat(arg(coordinator, "--butterfly.coordinator.node-id")).isEqualTo("$(POD_NAME)");
        assertThat(arg(coordinator, "--butterfly.coordinator.raft.replica-grpc-endpoints").split(","))
                .hasSize(5).allMatch(e -> e.endsWith(headless + ":9080"));
        assertThat(arg(coordinator, "--butterfly.coordinator.expected-workers")).isEqualTo("7");
        // Drains never take the group below a quorum of 3 of 5; a single replica gets no budget.
        assertThat(at(named(docs, "PodDisruptionBudget", "butterfly-coordinator"), "spec", "minAvailable")).isEqualTo(3);
        assertThat(kind(render(t -> t.set("coordinator.replicas", 1)), "PodDisruptionBudget")).isEmpty();
        assertThat(at(named(docs, "StatefulSet", "butterfly-worker"), "spec", "replicas")).isEqualTo(7);
        assertThat(arg(container(named(docs, "StatefulSet", "butterfly-worker")), "--butterfly.worker.coordinator-host"))
                .isEqualTo("butterfly-coordinator-0." + headless);
    }

    @Test
    void aLongReleaseNameKeepsNamesDistinctAndStatefulSetsWithinTheirLimit() {
        String release = "production-llm-inference-cluster-europe-west1-canary"; // 52 characters (Helm allows 53)
        List<Map<String, Object>> docs = render(t -> t.withName(release));

        // A StatefulSet's pods carry controller-revision-hash=<name>-<10 characters>: at most 63.
        assertThat(kind(docs, "StatefulSet")).extracting(d -> name(d)).hasSize(4).allSatisfy(n -> assertThat(n).hasSizeLessThanOrEqualTo(52));
        List<String> services = kind(docs, "Service").stream().map(d -> name(d)).toList();
        assertThat(services).doesNotHaveDuplicates().allSatisfy(n -> assertThat(n).hasSizeLessThanOrEqualTo(63));
        // Cut to 40 characters, without the dash that would end it there.
        assertThat(services).contains("production-llm-inference-cluster-europe-coordinator",
                "production-llm-inference-cluster-europe-coordinator-pods");
    }

    @Test
    void onlyTheRegistrySeesThePrivatePublisherKey() {
        List<Map<String, Object>> docs = render(t -> t);

        Map<String, Object> registry = named(docs, "StatefulSet", "butterfly-registry");
        assertThat(arg(container(registry), "--butterfly.registry.publisher-dir")).isEqualTo("/etc/butterfly/publisher");
        assertThat(secretVolume(registry, "publisher")).containsEntry("secretName", "butterfly-publisher").doesNotContainKey("items");
        for (String role : List.of("coordinator", "worker")) {
            Map<String, Object> set = named(docs, "StatefulSet", "butterfly-" + role);
            Map<String, Object> secret = secretVolume(set, "trusted-publisher");
            // identity.pub only, named after the property it sets through the config tree import.
            assertThat(secret.get("items")).isEqualTo(List.of(Map.of("key", "identity.pub",
                    "path", "butterfly." + role + ".trusted-publisher-keys")));
            assertThat(arg(container(set), "--spring.config.import")).isEqualTo("configtree:/etc/butterfly/trust/");
        }
        assertThat(secretVolume(named(docs, "StatefulSet", "butterfly-discovery"), "publisher")).isNull();
    }

    @Test
    void theRegistrysStoreIsSharedWithTheWorkersReadOnlyWhenAClaimIsGiven() {
        List<Map<String, Object>> off = render(t -> t);
        assertThat(arg(container(named(off, "StatefulSet", "butterfly-registry")), "--butterfly.registry.store-dir"))
                .isEqualTo("/var/lib/butterfly/registry");
        Map<String, Object> offWorker = named(off, "StatefulSet", "butterfly-worker");
        assertThat(arg(container(offWorker), "--butterfly.worker.registry.shared-store")).isNull();
        assertThat(volume(offWorker, "shared-store")).isNull();

        List<Map<String, Object>> on = render(t -> t.set("registry.sharedStoreClaim", "models-rwx"));
        String path = "/srv/butterfly/store";
        Map<String, Object> registry = named(on, "StatefulSet", "butterfly-registry");
        assertThat(arg(container(registry), "--butterfly.registry.store-dir")).isEqualTo(path);
        assertThat(mount(container(registry), "shared-store")).containsEntry("mountPath", path).doesNotContainKey("readOnly");
        assertThat(volume(registry, "shared-store")).containsEntry("persistentVolumeClaim", Map.of("claimName", "models-rwx"));
        // The private publisher key stays in its Secret, outside the store the workers see.
        assertThat(arg(container(registry), "--butterfly.registry.publisher-dir")).isEqualTo("/etc/butterfly/publisher");

        Map<String, Object> worker = named(on, "StatefulSet", "butterfly-worker");
        assertThat(arg(container(worker), "--butterfly.worker.registry.shared-store")).isEqualTo(path);
        assertThat(mount(container(worker), "shared-store")).containsEntry("mountPath", path).containsEntry("readOnly", true);
        assertThat(volume(worker, "shared-store")).containsEntry("persistentVolumeClaim",
                Map.of("claimName", "models-rwx", "readOnly", true));
        assertThat(volume(named(on, "StatefulSet", "butterfly-coordinator"), "shared-store")).isNull();
    }

    @Test
    void consulMembershipIsASwitch() {
        Map<String, Object> off = container(named(render(t -> t), "StatefulSet", "butterfly-discovery"));
        Map<String, Object> on = container(named(render(t -> t.set("consul.enabled", true).set("consul.host", "consul")),
                "StatefulSet", "butterfly-discovery"));

        assertThat(env(off, "SPRING_PROFILES_ACTIVE")).isNull();
        assertThat(arg(off, "--butterfly.discovery.backend")).isNull();
        assertThat(env(on, "SPRING_PROFILES_ACTIVE")).isEqualTo("consul");
        assertThat(env(on, "CONSUL_HOST")).isEqualTo("consul");
        assertThat(arg(on, "--butterfly.discovery.backend")).isEqualTo("consul");
    }

    @Test
    void apiKeysComeFromASecretThatOnlyTheCoordinatorsAndTheRegistryMount() {
        for (Map<String, Object> set : kind(render(t -> t), "StatefulSet")) {
            assertThat(volume(set, "api-keys")).as(name(set)).isNull();
            assertThat((List<?>) container(set).get("args")).as(name(set)).noneMatch(a -> a.toString().contains("api-keys"));
        }
        List<Map<String, Object>> docs = render(t -> t.set("apiKeys.secretName", "butterfly-api-keys"));
        Map<String, Object> coordinator = named(docs, "StatefulSet", "butterfly-coordinator");
        assertThat(arg(container(coordinator), "--butterfly.coordinator.api-keys.file"))
                .isEqualTo("/etc/butterfly/api-keys/api-keys");
        assertThat(arg(container(coordinator), "--butterfly.coordinator.api-keys.admin-file"))
                .isEqualTo("/etc/butterfly/api-keys/admin-api-keys");
        assertThat(mount(container(coordinator), "api-keys")).containsEntry("mountPath", "/etc/butterfly/api-keys")
                .containsEntry("readOnly", true);
        assertThat(secretVolume(coordinator, "api-keys")).containsEntry("secretName", "butterfly-api-keys")
                .containsEntry("items", List.of(Map.of("key", "api-keys", "path", "api-keys"),
                        Map.of("key", "admin-api-keys", "path", "admin-api-keys")));
        // The registry checks admin keys only (its import); workers and discovery see no key at all.
        Map<String, Object> registry = named(docs, "StatefulSet", "butterfly-registry");
        assertThat(arg(container(registry), "--butterfly.registry.api-keys.admin-file"))
                .isEqualTo("/etc/butterfly/api-keys/admin-api-keys");
        assertThat(secretVolume(registry, "api-keys")).containsEntry("items",
                List.of(Map.of("key", "admin-api-keys", "path", "admin-api-keys")));
        assertThat(volume(named(docs, "StatefulSet", "butterfly-worker"), "api-keys")).isNull();
        assertThat(volume(named(docs, "StatefulSet", "butterfly-discovery"), "api-keys")).isNull();
    }

    @Test
    void logsAreEcsJsonLinesAndTracesLeaveOnlyForAnEndpoint() {
        for (Map<String, Object> set : kind(render(t -> t), "StatefulSet")) {
            Map<String, Object> c = container(set);
            assertThat(env(c, "LOGGING_STRUCTURED_FORMAT_CONSOLE")).as(name(set)).isEqualTo("ecs");
            assertThat(env(c, "MANAGEMENT_TRACING_SAMPLING_PROBABILITY")).as(name(set)).isEqualTo("0.1");
            assertThat(env(c, "MANAGEMENT_OPENTELEMETRY_TRACING_EXPORT_OTLP_ENDPOINT")).as(name(set)).isNull();
        }
        String collector = "http://otel-collector.observability:4318/v1/traces";
        for (Map<String, Object> set : kind(render(t -> t.set("logging.format", "").set("tracing.otlpEndpoint", collector)
                .set("tracing.samplingProbability", 1)), "StatefulSet")) {
            Map<String, Object> c = container(set);
            assertThat(env(c, "LOGGING_STRUCTURED_FORMAT_CONSOLE")).as(name(set)).isNull();
            assertThat(env(c, "MANAGEMENT_OPENTELEMETRY_TRACING_EXPORT_OTLP_ENDPOINT")).as(name(set)).isEqualTo(collector);
            assertThat(env(c, "MANAGEMENT_TRACING_SAMPLING_PROBABILITY")).as(name(set)).isEqualTo("1");
        }
    }

    /**
     * The dashboard is valid JSON for Grafana's sidecar, and every Butterfly metric its panels query is one the
     * coordinator registers (ObservabilityIT checks them all against running services' /actuator/prometheus).
     */
    @Test
    void theGrafanaDashboardIsAConfigMapForTheSidecarQueryingRegisteredMetrics() throws IOException {
        Map<String, Object> map = named(render(t -> t), "ConfigMap", "butterfly-grafana-dashboard");
        assertThat(at(map, "metadata", "labels", "grafana_dashboard")).isEqualTo("1");
        String json = (String) at(map, "data", "butterfly.json");
        assertThat(json).isEqualTo(Files.readString(CHART.resolve("dashboards/butterfly.json")).strip());
        Set<String> queried = GrafanaDashboard.metrics(json);
        assertThat(queried).contains("butterfly_time_to_first_token_seconds_bucket", "butterfly_raft_leader",
                "butterfly_workers", "butterfly_stage_step_seconds_bucket", "jvm_memory_used_bytes");
        Set<String> registered = GrafanaDashboard.registeredInCode(LocalCluster.ROOT.resolve("coordinator-service/src/main/java"));
        assertThat(queried.stream().filter(m -> m.startsWith("butterfly_")).map(GrafanaDashboard::baseName))
                .as("registered by the coordinator: %s", registered).allMatch(registered::contains);
        assertThat(kind(render(t -> t.set("metrics.grafanaDashboard.enabled", false)), "ConfigMap")).isEmpty();
    }

    @Test
    void aServiceMonitorScrapesEachServiceOnceWhenAskedFor() {
        assertThat(kind(render(t -> t), "ServiceMonitor")).isEmpty();
        List<Map<String, Object>> docs = render(t -> t.set("metrics.serviceMonitor.enabled", true)
                .set("metrics.serviceMonitor.labels.release", "kube-prometheus-stack"));
        Map<String, Object> monitor = named(docs, "ServiceMonitor", "butterfly");
        assertThat(at(monitor, "metadata", "labels", "release")).isEqualTo("kube-prometheus-stack");
        @SuppressWarnings("unchecked")
        Map<String, Object> selector = (Map<String, Object>) at(monitor, "spec", "selector", "matchLabels");
        assertThat(at(monitor, "spec", "endpoints")).isEqualTo(List.of(
                Map.of("port", "http", "path", "/actuator/prometheus", "interval", "15s")));
        List<Map<String, Object>> scraped = kind(docs, "Service").stream().filter(svc -> selector.entrySet().stream()
                .allMatch(e -> e.getValue().equals(at(svc, "metadata", "labels", e.getKey())))).toList();
        // One Service per component, each with the http port; the coordinators' and workers' list every pod,
        // ready or not (a coordinator is ready only once the cluster is).
        assertThat(scraped).extracting(svc -> name(svc)).containsExactlyInAnyOrder("butterfly-coordinator-pods",
                "butterfly-worker-pods", "butterfly-registry", "butterfly-discovery");
        for (Map<String, Object> svc : scraped) {
            assertThat((List<?>) at(svc, "spec", "ports")).as(name(svc)).anySatisfy(p -> assertThat(p)
                    .isEqualTo(Map.of("name", "http", "port", name(svc).contains("coordinator") ? 8080
                            : name(svc).contains("worker") ? 8090 : name(svc).contains("registry") ? 8081 : 8082,
                            "targetPort", "http")));
        }
        assertThat(at(named(docs, "Service", "butterfly-coordinator-pods"), "spec", "publishNotReadyAddresses"))
                .isEqualTo(true);
    }

    @Test
    void k8sManifestsAreTheChartsDefaultRendering() throws IOException {
        String rendered = MANIFESTS_HEADER + renderText(t -> t);
        if (Boolean.getBoolean("butterfly.k8s.write")) {
            Files.writeString(MANIFESTS, rendered);
        }
        assertThat(Files.readString(MANIFESTS))
                .as("k8s/butterfly.yaml is stale: rerun this test with -Dbutterfly.k8s.write=true")
                .isEqualTo(rendered);
    }
}
