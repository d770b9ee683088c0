package io.butterfly.it;

import static io.butterfly.it.ChartManifests.*;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.command.Commands;
import io.butterfly.cli.generate.KeygenCommand;
import io.butterfly.registry.store.ModelStore;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The chart's pods, rehearsed without Kubernetes: every pod of the default rendering runs as a process in
 * its own network namespace (own IP, same ports as its siblings, as in a pod network), with the container's
 * args and env exactly as rendered ({@code $(VAR)} expanded, downward-API fields filled in), the image's
 * entry point ({@code java -jar /app/app.jar}), the registry's init container, and the publisher Secret
 * mounted as the chart mounts it. Pod and Service DNS names resolve through a hosts file. The test then
 * acts as the kubelet (every pod's readiness probe on its pod IP), as Prometheus (each pod's annotated
 * metrics endpoint) and as a client of the coordinator Service. The chart's own Secrets (each pod's TLS
 * certificate and key) are mounted from the rendering, so the pods speak mutual TLS as they would in a cluster.
 * Needs root and {@code ip netns}; skipped otherwise.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KubernetesRehearsalIT {

    private static final Pattern VAR = Pattern.compile("\\$\\((\\w+)\\)");
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** The keys of the API keys Secret the chart requires by default, as an operator would create it. */
    private static final String USER_KEY = "sk-rehearsal-user-0123456789abcdef";
    private static final String ADMIN_KEY = "sk-rehearsal-admin-0123456789abcdef";

    /**
     * One pod of a StatefulSet: its name, IP, namespace, the directory standing in for its volumes, and the
     * extracted jar standing in for its image's /app/app.jar.
     */
    private record Pod(String name, String component, Map<String, Object> set, String ip, String netns, Path root,
                       String jar) {
    }

    private final String tag = HexFormat.of().toHexDigits((short) ThreadLocalRandom.current().nextInt()); // 4 hex digits
    private final String bridge = "bfb" + tag;
    private final int subnet = 200 + ThreadLocalRandom.current().nextInt(50);
    private final List<Pod> pods = new ArrayList<>();
    private final List<Process> processes = new ArrayList<>();
    private final List<String> namespaces = new ArrayList<>();
    private Path work;
    private boolean bridgeUp;
    private List<Map<String, Object>> docs;

    @BeforeAll
    void startPods() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root for network namespaces");
        Assumptions.assumeTrue(sh("ip", "netns", "add", "bf-probe-" + tag) == 0, "needs ip netns");
        sh("ip", "netns", "del", "bf-probe-" + tag);

        work = Files.createTempDirectory("k8s-rehearsal");
        docs = render(t -> t);
        check(sh("ip", "link", "add", bridge, "type", "bridge"));
        bridgeUp = true;
        check(sh("ip", "addr", "add", net(1) + "/24", "dev", bridge));
        check(sh("ip", "link", "set", bridge, "up"));

        // The publisher Secret: identity.key and identity.pub from ./butterfly keygen.
        Path secret = work.resolve("secret/butterfly-publisher");
        CommandLine keygen = Commands.line(new KeygenCommand());
        keygen.setOut(new PrintWriter(Writer.nullWriter()));
        check(keygen.execute("--out", secret.toString()));

        StringBuilder hosts = new StringBuilder("127.0.0.1 localhost\n");
        int next = 10;
        for (Map<String, Object> set : kind(docs, "StatefulSet")) {
            String component = name(set).substring("butterfly-".length());
            int replicas = (Integer) at(set, "spec", "replicas");
            String headless = (String) at(set, "spec", "serviceName");
            for (int i = 0; i < replicas; i++) {
                String podName = name(set) + "-" + i;
                Pod pod = new Pod(podName, component, set, net(next), "bf-" + tag + "-" + next, work.resolve(podName),
                        imageJar(container(set)));
                next++;
                addNamespace(pod);
                pods.add(pod);
                hosts.append(pod.ip()).append(' ').append(podName).append('.').append(headless)
                        .append(".butterfly.svc.cluster.local\n");
            }
        }
        // A ClusterIP Service resolves to one of its pods here (no kube-proxy): the first.
        for (Map<String, Object> service : kind(docs, "Service")) {
            if (!"None".equals(at(service, "spec", "clusterIP"))) {
                String component = (String) at(service, "spec", "selector", "app.kubernetes.io/component");
                hosts.append(podsOf(component).get(0).ip()).append(' ').append(name(service)).append('\n');
            }
        }
        Path hostsFile = Files.writeString(work.resolve("hosts"), hosts);

        // As a kubelet would: every pod at once, only the registry's container after its init container. The other
        // pods start while the init container runs (they wait for the registry as in a cluster), rather than after it.
        for (Pod pod : pods) {
            mountVolumes(pod, secret);
            if (!pod.component().equals("registry")) {
                start(pod, hostsFile);
            }
        }
        for (Pod pod : podsOf("registry")) {
            runInitContainers(pod, hostsFile);
            start(pod, hostsFile);
        }
    }

    @AfterAll
    void stopPods() throws Exception {
        for (Process p : processes) {
            p.destroy();
        }
        for (Process p : processes) {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        for (String ns : namespaces) {
            sh("ip", "netns", "del", ns);
        }
        if (bridgeUp) {
            sh("ip", "link", "del", bridge);
        }
        if (work != null) {
            ModelStore.deleteRecursively(work); // a failure's pod logs are in its assertion message
        }
    }

    @Test
    void theChartsPodsBecomeReadyAndServeInferenceThroughTheCoordinators() throws Exception {
        // The kubelet's view: every pod's readiness probe, on its pod IP and named port.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        for (Pod pod : pods) {
            while (probe(pod, "readinessProbe") != 200) {
                assertThat(System.nanoTime()).as(pod.name() + " ready in time\n" + tails()).isLessThan(deadline);
                assertThat(processes).as("a pod exited\n" + tails()).allMatch(Process::isAlive);
                Thread.sleep(500);
            }
            assertThat(probe(pod, "livenessProbe")).as(pod.name()).isEqualTo(200);
        }
        // What Prometheus would scrape, per the pods' annotations.
        for (Pod pod : pods) {
            @SuppressWarnings("unchecked")
            Map<String, String> scrape = (Map<String, String>) at(pod.set(), "spec", "template", "metadata", "annotations");
            URI metrics = URI.create("http://" + pod.ip() + ":" + scrape.get("prometheus.io/port") + scrape.get("prometheus.io/path"));
            HttpResponse<String> reply = HTTP.send(HttpRequest.newBuilder(metrics).timeout(Duration.ofSeconds(10)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(reply.statusCode()).as(pod.name() + " " + metrics).isEqualTo(200);
            assertThat(reply.body()).as(pod.name()).contains("jvm_memory_used_bytes");
        }

        // Awaited, not read once: a coordinator is ready in DEGRADED too, and a worker stays ready while the leader
        // suspects it for a moment (silent over a second: eight JVMs share this machine's cores), so the probes
        // passing does not mean that every node is READY right now.
        Pod coordinator0 = podsOf("coordinator").get(0);
        List<String> expectedWorkers = List.of(
                "butterfly-worker-0=READY", "butterfly-worker-1=READY", "butterfly-worker-2=READY");
        long stateDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        JsonNode state = get(coordinator0, "/api/v1/system/state");
        while (!("READY".equals(state.path("system_state").asString())
                && workerNodes(state).containsAll(expectedWorkers)
                && state.path("raft").path("leader_id").asString().startsWith("butterfly-coordinator-"))
                && System.nanoTime() < stateDeadline) {
            Thread.sleep(500);
            state = get(coordinator0, "/api/v1/system/state");
        }
        assertThat(state.path("system_state").asString()).as(state.toString()).isEqualTo("READY");
        // Node ids are the pods' names.
        assertThat(workerNodes(state)).as(state.toString()).containsExactlyInAnyOrderElementsOf(expectedWorkers);
        assertThat(state.path("raft").path("leader_id").asString()).startsWith("butterfly-coordinator-");

        // Any replica serves inference and, greedy, they answer alike.
        String request = "{\"prompt\": \"The butterfly effect is\", \"max_tokens\": 8}";
        List<JsonNode> tokens = new ArrayList<>();
        for (Pod coordinator : podsOf("coordinator")) {
            HttpResponse<String> reply = HTTP.send(HttpRequest.newBuilder(url(coordinator, "/api/v1/inference"))
                            .timeout(Duration.ofMinutes(2)).header("Content-Type", "application/json")
                            .header("Authorization", "Bearer " + USER_KEY)
                            .POST(HttpRequest.BodyPublishers.ofString(request)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(reply.statusCode()).as(coordinator.name() + ": " + reply.body()).isEqualTo(200);
            tokens.add(JSON.readTree(reply.body()).path("token_ids"));
        }
        assertThat(tokens.get(0).size()).isEqualTo(8);
        assertThat(tokens).allMatch(t -> t.equals(tokens.get(0)));
    }

    /** The workers in a system state, as {@code id=state}. */
    private static List<String> workerNodes(JsonNode state) {
        List<String> workers = new ArrayList<>();
        for (JsonNode node : state.path("nodes")) {
            if ("worker".equals(node.path("role").asString())) {
                workers.add(node.path("id").asString() + "=" + node.path("state").asString());
            }
        }
        return workers;
    }

    // --- the pods --------------------------------------------------------------------------------------

    private String net(int host) {
        return "10.231." + subnet + "." + host;
    }

    private List<Pod> podsOf(String component) {
        return pods.stream().filter(p -> p.component().equals(component)).toList();
    }

    /** A network namespace with one interface on the bridge, like a pod on a node's pod network. */
    private void addNamespace(Pod pod) throws Exception {
        String host = "bfv" + tag + pod.ip().substring(pod.ip().lastIndexOf('.') + 1);
        check(sh("ip", "netns", "add", pod.netns()));
        namespaces.add(pod.netns());
        check(sh("ip", "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", pod.netns()));
        check(sh("ip", "link", "set", host, "master", bridge, "up"));
        check(sh("ip", "netns", "exec", pod.netns(), "ip", "addr", "add", pod.ip() + "/24", "dev", "eth0"));
        check(sh("ip", "netns", "exec", pod.netns(), "ip", "link", "set", "eth0", "up"));
        check(sh("ip", "netns", "exec", pod.netns(), "ip", "link", "set", "lo", "up"));
    }

    /**
     * Directories standing in for the pod's volumes, at the rendered mount paths under the pod's root: the
     * data claim, the models volume, the Secrets (whole, or only the items the chart selects): the chart's own as
     * rendered, the publisher's from {@code secret}.
     */
    @SuppressWarnings("unchecked")
    private void mountVolumes(Pod pod, Path secret) throws IOException {
        Map<String, Object> spec = (Map<String, Object>) at(pod.set(), "spec", "template", "spec");
        Map<String, Map<String, Object>> volumes = new LinkedHashMap<>();
        for (Map<String, Object> v : (List<Map<String, Object>>) spec.getOrDefault("volumes", List.of())) {
            volumes.put((String) v.get("name"), v);
        }
        for (Map<String, Object> m : (List<Map<String, Object>>) container(pod.set()).get("volumeMounts")) {
            Path dir = Files.createDirectories(pod.root().resolve(((String) m.get("mountPath")).substring(1)));
            Map<String, Object> volume = volumes.get(m.get("name"));
            Map<String, Object> fromSecret = volume == null ? null : (Map<String, Object>) volume.get("secret");
            if (fromSecret != null) {
                Map<String, byte[]> files = secretFiles((String) fromSecret.get("secretName"), secret);
                List<Map<String, Object>> items = (List<Map<String, Object>>) fromSecret.get("items");
                if (items == null) {
                    for (Map.Entry<String, byte[]> file : files.entrySet()) {
                        Files.write(dir.resolve(file.getKey()), file.getValue());
                    }
                } else {
                    for (Map<String, Object> item : items) {
                        Files.write(dir.resolve((String) item.get("path")), files.get((String) item.get("key")));
                    }
                }
            }
        }
        // libtorch is extracted onto the data volume in a real pod; here the build's extraction is shared.
        Path djlCache = pod.root().resolve("var/lib/butterfly/djl-cache");
        if (pod.component().equals("worker") && !Files.exists(djlCache)) {
            Files.createSymbolicLink(djlCache, Files.createDirectories(LocalCluster.ROOT.resolve(".butterfly/djl-cache")));
        }
    }

    /**
     * A Secret's files: the rendered Secret's data, the API keys an operator creates ({@link #USER_KEY}, {@link
     * #ADMIN_KEY}), or the publisher's key pair from {@code publisher}.
     */
    @SuppressWarnings("unchecked")
    private Map<String, byte[]> secretFiles(String secretName, Path publisher) throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        if (secretName.equals("butterfly-api-keys")) {
            files.put("api-keys", (USER_KEY + "\n").getBytes(StandardCharsets.UTF_8));
            files.put("admin-api-keys", (ADMIN_KEY + "\n").getBytes(StandardCharsets.UTF_8));
            return files;
        }
        for (Map<String, Object> rendered : kind(docs, "Secret")) {
            if (secretName.equals(name(rendered))) {
                ((Map<String, String>) rendered.get("data")).forEach((k, v) -> files.put(k, Base64.getDecoder().decode(v)));
                return files;
            }
        }
        for (String file : List.of("identity.key", "identity.pub")) {
            files.put(file, Files.readAllBytes(publisher.resolve(file)));
        }
        return files;
    }

    /**
     * The extracted jar standing in for a container's image, {@code <prefix>-<module>}: a service module's, or the
     * tools' (butterfly-cli) for {@code <prefix>-cli}.
     */
    private static String imageJar(Map<String, Object> container) {
        String image = (String) container.get("image");
        String module = image.substring(image.lastIndexOf('/') + 1, image.lastIndexOf(':')).substring("butterfly-".length());
        return LocalCluster.IMAGES.jar(module.equals("cli") ? "butterfly-cli" : module).toString();
    }

    /** Paths in args and env live under the pod's root; /app/app.jar is the module's extracted jar. */
    private static String inPod(Pod pod, String value) {
        return value.replace("/app/app.jar", pod.jar())
                .replaceAll("(?<![\\w.])/(var/lib/butterfly|etc/butterfly|models)", pod.root() + "/$1");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> environment(Pod pod, Map<String, Object> container) {
        Map<String, String> env = new LinkedHashMap<>();
        for (Map<String, Object> e : (List<Map<String, Object>>) container.getOrDefault("env", List.of())) {
            String name = (String) e.get("name");
            Object field = at(e, "valueFrom", "fieldRef", "fieldPath");
            if ("metadata.name".equals(field)) {
                env.put(name, pod.name());
            } else if ("status.podIP".equals(field)) {
                env.put(name, pod.ip());
            } else {
                env.put(name, inPod(pod, expand(String.valueOf(e.get("value")), env)));
            }
        }
        return env;
    }

    /** Kubernetes' $(VAR) expansion of args and env values from the container's earlier variables. */
    private static String expand(String value, Map<String, String> env) {
        Matcher m = VAR.matcher(value);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            m.appendReplacement(out, Matcher.quoteReplacement(env.getOrDefault(m.group(1), m.group())));
        }
        return m.appendTail(out).toString();
    }

    @SuppressWarnings("unchecked")
    private void runInitContainers(Pod pod, Path hostsFile) throws Exception {
        for (Map<String, Object> init : (List<Map<String, Object>>) at(pod.set(), "spec", "template", "spec", "initContainers")) {
            List<String> cmd = new ArrayList<>((List<String>) init.get("command"));
            for (Object a : (List<Object>) init.get("args")) {
                String arg = String.valueOf(a).replace("/app/app.jar", imageJar(init)); // its own image's
                cmd.add(inPod(pod, arg).replace("java ", LocalCluster.IMAGES.java().java() + " "));
            }
            Process p = process(pod, cmd, Map.of(), pod.root().resolve(init.get("name") + ".log"), hostsFile);
            assertThat(p.waitFor(300, TimeUnit.SECONDS) && p.exitValue() == 0)
                    .as("init container " + init.get("name") + ": " + Files.readString(pod.root().resolve(init.get("name") + ".log")))
                    .isTrue();
        }
    }

    /** The container: the image's entry point (java -jar /app/app.jar) and the rendered args and env. */
    @SuppressWarnings("unchecked")
    private void start(Pod pod, Path hostsFile) throws IOException {
        Map<String, Object> container = container(pod.set());
        Map<String, String> env = environment(pod, container);
        List<String> cmd = new ArrayList<>(List.of(LocalCluster.IMAGES.java().java(), "-XX:TieredStopAtLevel=1", "-jar", inPod(pod, "/app/app.jar")));
        for (Object a : (List<Object>) container.get("args")) {
            cmd.add(inPod(pod, expand(String.valueOf(a), env)));
        }
        processes.add(process(pod, cmd, env, pod.root().resolve("container.log"), hostsFile));
    }

    private Process process(Pod pod, List<String> command, Map<String, String> env, Path log, Path hostsFile)
            throws IOException {
        List<String> cmd = new ArrayList<>(List.of("ip", "netns", "exec", pod.netns()));
        cmd.addAll(command);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                .directory(pod.root().toFile());
        pb.environment().putAll(env);
        // Cluster DNS: pod and Service names from the hosts file (JDK option, so nothing system-wide changes).
        String tool = pb.environment().getOrDefault("JAVA_TOOL_OPTIONS", "");
        pb.environment().put("JAVA_TOOL_OPTIONS", (tool + " -Djdk.net.hosts.file=" + hostsFile).strip());
        return pb.start();
    }

    // --- the kubelet and the client --------------------------------------------------------------------

    private int probe(Pod pod, String probe) {
        Map<String, Object> container = container(pod.set());
        String path = (String) at(container, probe, "httpGet", "path");
        try {
            return HTTP.send(HttpRequest.newBuilder(url(pod, path)).timeout(Duration.ofSeconds(3)).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (IOException e) {
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        }
    }

    private URI url(Pod pod, String path) {
        return URI.create("http://" + pod.ip() + ":" + port(container(pod.set()), "http") + path);
    }

    private JsonNode get(Pod pod, String path) throws Exception {
        HttpResponse<String> reply = HTTP.send(HttpRequest.newBuilder(url(pod, path)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(reply.statusCode()).as(reply.body()).isEqualTo(200);
        return JSON.readTree(reply.body());
    }

    private String tails() {
        StringBuilder out = new StringBuilder();
        for (Pod pod : pods) {
            Path log = pod.root().resolve("container.log");
            try {
                List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
                out.append("--- ").append(pod.name()).append('\n')
                        .append(String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()))).append('\n');
            } catch (IOException | UncheckedIOException e) {
                out.append("--- ").append(pod.name()).append(": ").append(e.getMessage()).append('\n');
            }
        }
        return out.toString();
    }

    private static int sh(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        return p.waitFor(30, TimeUnit.SECONDS) ? p.exitValue() : -1;
    }

    private static void check(int exit) {
        assertThat(exit).as("set-up command exit code").isZero();
    }
}
