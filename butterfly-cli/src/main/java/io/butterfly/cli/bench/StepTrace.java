package io.butterfly.cli.bench;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Where one profiled step's time went, from libtorch's Chrome trace of it: per operation scope of the stage scripts
 * ({@code norm}, {@code projection q|k|v}, {@code attention}, ...), per layer ({@code layer N}), and in the engine's
 * method calls altogether (the trace's outermost events: {@code embed}, {@code layers}, {@code head}). Times in
 * milliseconds.
 *
 * @param byOperation time per operation scope, the embedding lookup as {@code embedding}
 * @param byLayer     time per layer, by layer slot of the stage
 * @param engineMs    time inside the engine's method calls
 */
record StepTrace(Map<String, Double> byOperation, Map<Integer, Double> byLayer, double engineMs) {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String LAYER = "layer ";

    /** Parses a trace as libtorch's profiler writes it (a JSON array of complete events: name, ts, dur in us). */
    static StepTrace parse(String chromeTrace) {
        record Event(String name, double start, double duration) {
            double end() {
                return start + duration;
            }
        }
        List<Event> events = new ArrayList<>();
        for (JsonNode e : JSON.readTree(chromeTrace)) {
            if (e.has("ts") && e.has("dur")) {
                events.add(new Event(e.path("name").asString(), e.path("ts").asDouble(), e.path("dur").asDouble()));
            }
        }
        events.sort(Comparator.comparingDouble(Event::start).thenComparing(Comparator.comparingDouble(Event::duration).reversed()));
        Map<String, Double> byOperation = new LinkedHashMap<>();
        Map<Integer, Double> byLayer = new TreeMap<>();
        double engine = 0;
        double rootEnd = Double.NEGATIVE_INFINITY;
        for (Event e : events) {
            if (e.start() >= rootEnd) { // outside every earlier event: a method called from Java
                engine += e.duration();
                rootEnd = e.end();
                if (e.name().equals("embed")) {
                    byOperation.merge("embedding", e.duration() / 1000, Double::sum);
                }
            }
            if (e.name().startsWith(LAYER)) {
                byLayer.merge(Integer.parseInt(e.name().substring(LAYER.length())), e.duration() / 1000, Double::sum);
            } else if (isScope(e.name())) {
                byOperation.merge(e.name(), e.duration() / 1000, Double::sum);
            }
        }
        return new StepTrace(byOperation, byLayer, engine / 1000);
    }

    /** Whether an event is one of the stage scripts' scopes, not an operation of libtorch's ({@code aten::add}). */
    private static boolean isScope(String name) {
        return name.equals("norm") || name.startsWith("projection ") || name.equals("rotary")
                || name.equals("attention") || name.equals("residual") || name.equals("activation");
    }
}
