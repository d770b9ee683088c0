package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.marcnuri.helm.Helm;
import com.marcnuri.helm.TemplateCommand;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.UnaryOperator;
import org.yaml.snakeyaml.Yaml;

/** The Helm chart rendered by Helm's own library (helm-java), and navigation in the rendered documents. */
final class ChartManifests {

    static final Path CHART = LocalCluster.ROOT.resolve("helm/butterfly");

    private ChartManifests() {
    }

    static String renderText(UnaryOperator<TemplateCommand> values) {
        return values.apply(new Helm(CHART).template().withName("butterfly").withNamespace("butterfly")).call();
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> render(UnaryOperator<TemplateCommand> values) {
        List<Map<String, Object>> docs = new ArrayList<>();
        for (Object doc : new Yaml().loadAll(renderText(values))) {
            if (doc != null) {
                docs.add((Map<String, Object>) doc);
            }
        }
        return docs;
    }

    static List<Map<String, Object>> kind(List<Map<String, Object>> docs, String kind) {
        return docs.stream().filter(d -> kind.equals(d.get("kind"))).toList();
    }

    static Map<String, Object> named(List<Map<String, Object>> docs, String kind, String name) {
        return kind(docs, kind).stream().filter(d -> name.equals(name(d))).findFirst()
                .orElseThrow(() -> new AssertionError("no " + kind + " " + name));
    }

    static String name(Map<String, Object> doc) {
        return (String) at(doc, "metadata", "name");
    }

    @SuppressWarnings("unchecked")
    static Object at(Map<String, Object> map, String... path) {
        Object node = map;
        for (String key : path) {
            if (!(node instanceof Map)) {
                return null;
            }
            node = ((Map<String, Object>) node).get(key);
        }
        return node;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> container(Map<String, Object> set) {
        List<Map<String, Object>> containers = (List<Map<String, Object>>) at(set, "spec", "template", "spec", "containers");
        assertThat(containers).hasSize(1);
        return containers.get(0);
    }

    @SuppressWarnings("unchecked")
    static String arg(Map<String, Object> container, String option) {
        for (Object a : (List<Object>) container.get("args")) {
            String s = String.valueOf(a);
            if (s.startsWith(option + "=")) {
                return s.substring(option.length() + 1);
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    static String env(Map<String, Object> container, String name) {
        for (Map<String, Object> e : (List<Map<String, Object>>) container.get("env")) {
            if (name.equals(e.get("name"))) {
                return Objects.toString(e.get("value"), null);
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    static int port(Map<String, Object> container, String name) {
        for (Map<String, Object> p : (List<Map<String, Object>>) container.get("ports")) {
            if (name.equals(p.get("name"))) {
                return (Integer) p.get("containerPort");
            }
        }
        throw new AssertionError("no port " + name);
    }

    @SuppressWarnings("unchecked")
    static String probePath(Map<String, Object> container, String probe) {
        assertThat(at(container, probe, "httpGet", "port")).as(probe).isEqualTo("http");
        return (String) at(container, probe, "httpGet", "path");
    }

    /** The pod volume named {@code volume} of a StatefulSet, or null. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> volume(Map<String, Object> set, String volume) {
        List<Map<String, Object>> volumes = (List<Map<String, Object>>) at(set, "spec", "template", "spec", "volumes");
        return volumes == null ? null
                : volumes.stream().filter(v -> volume.equals(v.get("name"))).findFirst().orElse(null);
    }

    /** The container's mount of the volume named {@code volume}, or null. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> mount(Map<String, Object> container, String volume) {
        List<Map<String, Object>> mounts = (List<Map<String, Object>>) container.get("volumeMounts");
        return mounts == null ? null : mounts.stream().filter(m -> volume.equals(m.get("name"))).findFirst().orElse(null);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> secretVolume(Map<String, Object> set, String volume) {
        Map<String, Object> v = volume(set, volume);
        return v == null ? null : (Map<String, Object>) v.get("secret");
    }
}
