package io.butterfly.it;

import static io.butterfly.it.ChartManifests.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.LintResult;
import com.marcnuri.helm.TemplateCommand;
import io.butterfly.common.grpc.tls.TlsProperties;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.ssl.pem.PemContent;
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
import java.util.function.UnaryOperator;
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
            # namespace "butterfly" (HelmChartIT checks it is up to date), but without the Secrets holding the pods'
            # TLS certificates and keys (tls.createSecrets=false: no private key belongs in a repository). For
            # clusters without Helm:
            #   kubectl create namespace butterfly
            #   kubectl label namespace butterfly pod-security.kubernetes.io/enforce=restricted
            #   kubectl -n butterfly create secret generic butterfly-publisher --from-file=<dir from ./butterfly keygen>
            #   kubectl -n butterfly create secret generic butterfly-api-keys --from-file=api-keys=keys.txt \\
            #       --from-file=admin-api-keys=admin-keys.txt
            #   helm template butterfly helm/butterfly -n butterfly --show-only templates/tls.yaml | kubectl -n butterfly apply -f -
            #   kubectl -n butterfly apply -f k8s/butterfly.yaml
            """;
    /** How k8s/butterfly.yaml is rendered: the defaults, the TLS Secrets left out. */
    private static final UnaryOperator<TemplateCommand> MANIFEST_VALUES = t -> t.set("tls.createSecrets", false);

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
                        EngineProperties.class, io.butterfly.coordinator.config.ApiKeysProperties.class,
                        TlsProperties.class),
                "butterfly-worker", List.of(WorkerProperties.class, RegistryClientProperties.class, TlsProperties.class),
                "butterfly-registry", List.of(RegistryProperties.class, io.butterfly.registry.config.ApiKeysProperties.class,
                        TlsProperties.class),
                "butterfly-discovery", List.of(DiscoveryProperties.class, TlsProperties.class));
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

    /**
     * Issue 47, item 8: keys are required by default (the Secret {@code butterfly-api-keys}); {@code auth.enabled=false}
     * turns them off, and auth on without a Secret named fails the rendering instead of leaving every endpoint open.
     */
    @Test
    void apiKeysAreRequiredUnlessAuthIsTurnedOff() {
        for (Map<String, Object> set : kind(render(t -> t.set("auth.enabled", false)), "StatefulSet")) {
            assertThat(volume(set, "api-keys")).as(name(set)).isNull();
            assertThat((List<?>) container(set).get("args")).as(name(set)).noneMatch(a -> a.toString().contains("api-keys"));
        }
        assertThat(secretVolume(named(render(t -> t), "StatefulSet", "butterfly-coordinator"), "api-keys"))
                .as("the default").containsEntry("secretName", "butterfly-api-keys");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> render(t -> t.set("apiKeys.secretName", "")))
                .hasMessageContaining("auth.enabled (the default) needs apiKeys.secretName");
    }

    @Test
    void apiKeysComeFromASecretThatOnlyTheCoordinatorsAndTheRegistryMount() {
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
        String rendered = MANIFESTS_HEADER + renderText(MANIFEST_VALUES);
        if (Boolean.getBoolean("butterfly.k8s.write")) {
            Files.writeString(MANIFESTS, rendered);
        }
        assertThat(Files.readString(MANIFESTS))
                .as("k8s/butterfly.yaml is stale: rerun this test with -Dbutterfly.k8s.write=true")
                .isEqualTo(rendered);
    }

    /** Every container of every pod, init containers too, in the default rendering and with optional volumes. */
    @Test
    void everyPodMeetsTheRestrictedPodSecurityStandard() {
        for (List<Map<String, Object>> docs : List.of(render(t -> t), render(t -> t.set("consul.enabled", true)
                .set("registry.sharedStoreClaim", "store").set("registry.modelsVolume.persistentVolumeClaim.claimName", "models")))) {
            List<Map<String, Object>> sets = kind(docs, "StatefulSet");
            assertThat(sets).hasSize(4);
            for (Map<String, Object> set : sets) {
                assertThat(RestrictedPodSecurity.violations(set)).as(name(set)).isEmpty();
            }
        }
        // The check sees a field that breaks the profile.
        Map<String, Object> worker = named(render(t -> t), "StatefulSet", "butterfly-worker");
        @SuppressWarnings("unchecked")
        Map<String, Object> security = (Map<String, Object>) container(worker).get("securityContext");
        security.remove("capabilities");
        security.put("allowPrivilegeEscalation", true);
        @SuppressWarnings("unchecked")
        Map<String, Object> limits = (Map<String, Object>) at(container(worker), "resources", "limits");
        limits.remove("cpu");
        assertThat(RestrictedPodSecurity.violations(worker)).containsExactlyInAnyOrder(
                "butterfly-worker container worker: securityContext.capabilities.drop must contain ALL",
                "butterfly-worker container worker: securityContext.allowPrivilegeEscalation must be false",
                "butterfly-worker container worker: resources.limits.cpu must be set");
    }

    /**
     * With the chart's NetworkPolicies, each of the cluster's flows is allowed, both ends, and a sample of what is
     * not a flow is refused: clients reach only the coordinators' HTTP port, Raft only coordinators, nobody leaves
     * the release but for DNS.
     */
    @Test
    void networkPoliciesDenyEverythingButTheClustersFlows() {
        List<Map<String, Object>> docs = render(t -> t);
        NetworkPolicies policies = new NetworkPolicies(kind(docs, "NetworkPolicy"), "butterfly");
        assertThat(kind(docs, "NetworkPolicy")).extracting(d -> name(d)).contains("butterfly-default-deny");
        Map<String, NetworkPolicies.Pod> pod = new LinkedHashMap<>();
        for (Map<String, Object> set : kind(docs, "StatefulSet")) {
            @SuppressWarnings("unchecked")
            Map<String, String> labels = (Map<String, String>) at(set, "spec", "template", "metadata", "labels");
            Map<String, Integer> ports = new LinkedHashMap<>();
            for (String p : List.of("http", "grpc", "raft", "hazelcast")) {
                try {
                    ports.put(p, port(container(set), p));
                } catch (AssertionError none) {
                    // not a port of this component
                }
            }
            pod.put(labels.get("app.kubernetes.io/component"), new NetworkPolicies.Pod("butterfly",
                    Map.of("kubernetes.io/metadata.name", "butterfly"), labels, ports));
        }
        NetworkPolicies.Pod client = new NetworkPolicies.Pod("apps", Map.of("kubernetes.io/metadata.name", "apps"),
                Map.of("app", "chat"), Map.of());
        NetworkPolicies.Pod prometheus = new NetworkPolicies.Pod("monitoring", Map.of("kubernetes.io/metadata.name",
                "monitoring"), Map.of("app.kubernetes.io/name", "prometheus"), Map.of());
        NetworkPolicies.Pod dns = new NetworkPolicies.Pod("kube-system", Map.of("kubernetes.io/metadata.name", "kube-system"),
                Map.of("k8s-app", "kube-dns"), Map.of());
        NetworkPolicies.Pod elsewhere = new NetworkPolicies.Pod("web", Map.of(), Map.of(), Map.of());

        List<String> allowed = List.of("coordinator>worker:grpc", "worker>coordinator:grpc", "worker>worker:grpc",
                "worker>registry:grpc", "coordinator>registry:grpc", "worker>discovery:grpc", "coordinator>discovery:grpc",
                "coordinator>coordinator:raft", "discovery>discovery:hazelcast");
        for (String flow : allowed) {
            assertThat(policies.allows(pod.get(from(flow)), pod.get(to(flow)), portOf(flow), "TCP")).as(flow).isTrue();
        }
        for (String component : pod.keySet()) {
            assertThat(policies.allows(prometheus, pod.get(component), "http", "TCP")).as("prometheus>" + component).isTrue();
            assertThat(policies.allows(pod.get(component), dns, "53", "UDP")).as(component + ">dns").isTrue();
            assertThat(policies.allows(pod.get(component), elsewhere, "443", "TCP")).as(component + ">internet").isFalse();
            assertThat(policies.allows(client, pod.get(component), "grpc", "TCP")).as("client>" + component + ":grpc").isFalse();
        }
        assertThat(policies.allows(client, pod.get("coordinator"), "http", "TCP")).as("client>coordinator:http").isTrue();
        for (String denied : List.of("worker>coordinator:raft", "registry>worker:grpc", "discovery>worker:grpc",
                "registry>coordinator:grpc", "worker>discovery:hazelcast", "coordinator>worker:http", "worker>registry:http")) {
            assertThat(policies.allows(pod.get(from(denied)), pod.get(to(denied)), portOf(denied), "TCP")).as(denied).isFalse();
        }
        assertThat(policies.allows(client, pod.get("coordinator"), "raft", "TCP")).isFalse();
        assertThat(policies.allows(client, pod.get("registry"), "http", "TCP")).isFalse();
    }

    private static String from(String flow) {
        return flow.substring(0, flow.indexOf('>'));
    }

    private static String to(String flow) {
        return flow.substring(flow.indexOf('>') + 1, flow.indexOf(':'));
    }

    private static String portOf(String flow) {
        return flow.substring(flow.indexOf(':') + 1);
    }

    /**
     * Every pod gets its own certificate from the cluster CA (generated, or the one given), naming its identity and the
     * names it is dialled at, with a key the services' PEM reader loads; its component's Secret is mounted and named in
     * its arguments. TLS off: no Secret, plaintext, and discovery back on trust-on-first-use.
     */
    @Test
    void everyPodHasItsOwnCertificateFromTheClusterCa(@TempDir Path dir) throws Exception {
        ClusterCa given = ClusterCa.create("operator CA", Duration.ofDays(30));
        given.writeTo(dir);
        for (List<Map<String, Object>> docs : List.of(render(t -> t), render(t -> t
                .setFile("tls.ca.certificate", dir.resolve("ca.crt")).setFile("tls.ca.key", dir.resolve("ca.key"))))) {
            X509Certificate ca = null;
            for (Map<String, Object> set : kind(docs, "StatefulSet")) {
                String component = (String) at(set, "spec", "template", "metadata", "labels", "app.kubernetes.io/component");
                Map<String, Object> container = container(set);
                assertThat(arg(container, "--butterfly.tls.certificate")).isEqualTo("/etc/butterfly/tls/$(POD_NAME).crt");
                assertThat(arg(container, "--butterfly.tls.private-key")).isEqualTo("/etc/butterfly/tls/$(POD_NAME).key");
                assertThat(arg(container, "--butterfly.tls.ca")).isEqualTo("/etc/butterfly/tls/ca.crt");
                assertThat(mount(container, "tls")).containsEntry("mountPath", "/etc/butterfly/tls").containsEntry("readOnly", true);
                assertThat(secretVolume(set, "tls")).containsEntry("secretName", name(set) + "-tls").containsEntry("defaultMode", 0440);

                @SuppressWarnings("unchecked")
                Map<String, String> data = (Map<String, String>) named(docs, "Secret", name(set) + "-tls").get("data");
                X509Certificate setCa = certificate(data.get("ca.crt"));
                ca = ca == null ? setCa : ca;
                assertThat(setCa).isEqualTo(ca);
                int replicas = (Integer) at(set, "spec", "replicas");
                assertThat(data).hasSize(1 + 2 * replicas);
                for (int i = 0; i < replicas; i++) {
                    String podName = name(set) + "-" + i;
                    X509Certificate cert = certificate(data.get(podName + ".crt"));
                    cert.verify(ca.getPublicKey());
                    cert.checkValidity();
                    assertThat(PeerIdentity.of(cert)).contains(new PeerIdentity(NodeRole.ofLabel(component).orElseThrow(), podName));
                    assertThat(cert.getSubjectAlternativeNames()).extracting(n -> (Object) n.get(1)).contains(
                            podName + "." + at(set, "spec", "serviceName") + ".butterfly.svc.cluster.local",
                            name(set), "localhost", "127.0.0.1");
                    // the key as the services read it (Spring Boot's PEM parser: Helm writes RSA keys as PKCS#1)
                    PrivateKey key = PemContent.of(new String(Base64.getDecoder().decode(data.get(podName + ".key")),
                            StandardCharsets.US_ASCII)).getPrivateKey();
                    Signature signature = Signature.getInstance("SHA256withRSA");
                    signature.initSign(key);
                    signature.update(podName.getBytes(StandardCharsets.UTF_8));
                    byte[] signed = signature.sign();
                    signature.initVerify(cert.getPublicKey());
                    signature.update(podName.getBytes(StandardCharsets.UTF_8));
                    assertThat(signature.verify(signed)).as(podName + ": key and certificate belong together").isTrue();
                }
            }
            assertThat(arg(container(named(docs, "StatefulSet", "butterfly-discovery")),
                    "--butterfly.discovery.admission.trust-on-first-use")).isEqualTo("false");
            if (kind(docs, "Secret").stream().anyMatch(d -> name(d).equals("butterfly-tls-ca"))) {
                assertThat(ca.getSubjectX500Principal().getName()).isEqualTo("CN=Butterfly cluster CA");
            } else {
                assertThat(ca).as("the CA given as values").isEqualTo(given.certificate());
            }
        }

        List<Map<String, Object>> plaintext = render(t -> t.set("tls.enabled", false));
        assertThat(kind(plaintext, "Secret")).isEmpty();
        for (Map<String, Object> set : kind(plaintext, "StatefulSet")) {
            assertThat(arg(container(set), "--butterfly.tls.enabled")).as(name(set)).isEqualTo("false");
            assertThat(volume(set, "tls")).as(name(set)).isNull();
        }
        assertThat(arg(container(named(plaintext, "StatefulSet", "butterfly-discovery")),
                "--butterfly.discovery.admission.trust-on-first-use")).isEqualTo("true");
        assertThat(kind(render(MANIFEST_VALUES), "Secret")).as("k8s/butterfly.yaml holds no key").isEmpty();
    }

    private static X509Certificate certificate(String base64Pem) throws Exception {
        return (X509Certificate) CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(Base64.getDecoder().decode(base64Pem)));
    }
}
