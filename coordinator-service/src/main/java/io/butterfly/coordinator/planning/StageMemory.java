package io.butterfly.coordinator.planning;

/**
 * The memory of every stage {@code [start, end)} of a model in one subtraction ({@link ModelFootprint#stageBytes} sums
 * the range's layers, which made the optimal planner's table cubic in the layers). Exact: the same long as that sum.
 */
record StageMemory(long[] prefix, long embedding, long head, long overhead) {

    static StageMemory of(ModelFootprint model) {
        int layers = model.numLayers();
        long[] bytes = model.layerBytes();
        long[] prefix = new long[layers + 1];
        for (int l = 0; l < layers; l++) {
            prefix[l + 1] = prefix[l] + bytes[l];
        }
        return new StageMemory(prefix, model.embeddingBytes(), model.headBytes(), model.stageOverheadBytes());
    }

    /** {@link ModelFootprint#stageBytes}. */
    long stageBytes(int start, int end) {
        return overhead + (prefix[end] - prefix[start]) + (start == 0 ? embedding : 0)
                + (end == prefix.length - 1 ? head : 0);
    }

    /** {@link PartitionPlanner#fits}: the stage fits a worker of {@code memoryBytes} (0: unknown, anything fits). */
    boolean fits(long memoryBytes, int start, int end) {
        return memoryBytes == 0 || stageBytes(start, end) <= memoryBytes;
    }
}
