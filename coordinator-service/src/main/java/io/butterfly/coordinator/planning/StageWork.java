package io.butterfly.coordinator.planning;

/**
 * Per-step work of every layer prefix and of the head (weight bytes, or 1 per layer and 0 for the head when no layer's
 * weight size is known), so that a stage's work is one subtraction and its time one division: exact, like an
 * exhaustive search (see {@link OptimalPlanner} for why weight bytes).
 */
record StageWork(long[] prefix, long head) {

    static StageWork of(ModelFootprint model) {
        int layers = model.numLayers();
        long[] prefix = new long[layers + 1];
        for (int l = 0; l < layers; l++) {
            prefix[l + 1] = prefix[l] + model.layerWeightBytes(l);
        }
        if (prefix[layers] > 0) { // weights known (a head alone would put every other stage at no cost)
            return new StageWork(prefix, model.headBytes());
        }
        for (int l = 0; l <= layers; l++) {
            prefix[l] = l;
        }
        return new StageWork(prefix, 0);
    }

    /** Seconds-like time of the stage {@code [start, end)} on worker {@code w}. */
    double stageTime(WorkerCapacity w, int start, int end) {
        long units = prefix[end] - prefix[start] + (end == prefix.length - 1 ? head : 0);
        return units / w.gflops();
    }
}
