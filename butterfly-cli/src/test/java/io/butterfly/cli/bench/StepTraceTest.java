package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** A profiled step's trace summed per operation scope and layer, the engine's calls counted once each. */
class StepTraceTest {

    @Test
    void scopesAreSummedByNameLayersByNumberAndEachCallFromJavaOnce() {
        // As libtorch writes it: complete events (ts, dur in microseconds) in no particular order; a method called
        // from Java shows twice, nested (the call and the function), and operations nest in the scopes.
        String trace = """
                [
                {"name": "layers", "ph": "X", "ts": 20, "dur": 100, "tid": 1},
                {"name": "embed", "ph": "X", "ts": 1, "dur": 8, "tid": 1},
                {"name": "embed", "ph": "X", "ts": 0, "dur": 10, "tid": 1},
                {"name": "layers", "ph": "X", "ts": 21, "dur": 98, "tid": 1},
                {"name": "layer 0", "ph": "X", "ts": 22, "dur": 48, "tid": 1},
                {"name": "norm", "ph": "X", "ts": 22, "dur": 8, "tid": 1},
                {"name": "aten::mul", "ph": "X", "ts": 23, "dur": 2, "tid": 1},
                {"name": "projection q|k|v", "ph": "X", "ts": 30, "dur": 30, "tid": 1},
                {"name": "layer 1", "ph": "X", "ts": 70, "dur": 48, "tid": 1},
                {"name": "attention", "ph": "X", "ts": 70, "dur": 30, "tid": 1},
                {"name": "head", "ph": "X", "ts": 130, "dur": 20, "tid": 1},
                {"name": "norm", "ph": "X", "ts": 131, "dur": 4, "tid": 1},
                {"name": "projection head", "ph": "X", "ts": 135, "dur": 14, "tid": 1},
                {"name": "[memory]", "ph": "i", "ts": 140, "tid": 1}
                ]""";
        StepTrace t = StepTrace.parse(trace);
        assertThat(t.byOperation()).containsOnlyKeys("embedding", "norm", "projection q|k|v", "attention", "projection head");
        assertThat(t.byOperation().get("embedding")).isCloseTo(0.010, within(1e-9));
        assertThat(t.byOperation().get("norm")).isCloseTo(0.012, within(1e-9));
        assertThat(t.byOperation().get("projection q|k|v")).isCloseTo(0.030, within(1e-9));
        assertThat(t.byLayer()).isEqualTo(Map.of(0, 0.048, 1, 0.048));
        assertThat(t.engineMs()).isCloseTo(0.130, within(1e-9));
    }
}
