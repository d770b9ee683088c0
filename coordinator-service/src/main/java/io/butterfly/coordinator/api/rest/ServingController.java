package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.ServingStatus;
import io.butterfly.coordinator.inference.InferenceService;
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
    public ServingStatus serving() {
        return new ServingStatus(inference.running(), inference.waiting(), inference.generatedTokens(),
                inference.kvCacheUsage(), System.currentTimeMillis());
    }
}
