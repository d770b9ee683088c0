package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.inference.InferenceService;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * This replica's serving engine now, for the dashboard's live figures: requests running and waiting, tokens generated
 * so far (a client takes their rate between two reads), and each worker's KV cache held by this replica.
 */
@RestController
public class ServingController {

    private final InferenceService inference;

    public ServingController(InferenceService inference) {
        this.inference = inference;
    }

    @GetMapping("/api/v1/serving")
    public Map<String, Object> serving() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("running", inference.running());
        out.put("waiting", inference.waiting());
        out.put("generated_tokens", inference.generatedTokens());
        out.put("kv_cache_usage", inference.kvCacheUsage());
        out.put("at_ms", System.currentTimeMillis());
        return out;
    }
}
