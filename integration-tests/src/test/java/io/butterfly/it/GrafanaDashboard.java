package io.butterfly.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;

/** The metrics the chart's Grafana dashboard (helm/butterfly/dashboards/butterfly.json) queries. */
public final class GrafanaDashboard {

    static final Path JSON = LocalCluster.ROOT.resolve("helm/butterfly/dashboards/butterfly.json");

    private static final Pattern METRIC = Pattern.compile("\\b(?:butterfly|jvm|process)_[a-z0-9_]+\\b");
    private static final Pattern MICROMETER_NAME = Pattern.compile("\"(butterfly\\.[a-z0-9_.]+)\"");

    private GrafanaDashboard() {
    }

    /** Every metric name in the panels' PromQL expressions. */
    static Set<String> metrics(String dashboard) {
        Set<String> out = new TreeSet<>();
        for (JsonNode panel : LocalCluster.JSON.readTree(dashboard).path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                Matcher m = METRIC.matcher(target.path("expr").asString());
                while (m.find()) {
                    out.add(m.group());
                }
            }
        }
        return out;
    }

    public static Set<String> metrics() throws IOException {
        return metrics(Files.readString(JSON));
    }

    /** A Prometheus name as Micrometer registered it, dots as underscores: no series suffix, no base unit. */
    static String baseName(String prometheus) {
        return prometheus.replaceFirst("_(bucket|sum|count|max|total)$", "").replaceFirst("_seconds$", "");
    }

    /** The {@code butterfly.*} meter names in a source tree's string literals, dots as underscores. */
    static Set<String> registeredInCode(Path sources) throws IOException {
        Set<String> out = new TreeSet<>();
        try (Stream<Path> files = Files.walk(sources)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
                Matcher m = MICROMETER_NAME.matcher(Files.readString(f));
                while (m.find()) {
                    out.add(m.group(1).replace('.', '_'));
                }
            }
        }
        return out;
    }
}
