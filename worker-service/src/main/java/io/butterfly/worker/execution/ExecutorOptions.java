package io.butterfly.worker.execution;

/**
 * Where and how a partition runs.
 *
 * @param device  "cpu", "gpu:N" or "auto" (the first GPU the engine reports, else the CPU)
 * @param threads intra-op threads of the engine (process-wide); 0 keeps the engine default
 */
public record ExecutorOptions(String device, int threads) {

    public ExecutorOptions {
        if (device == null || device.isBlank()) {
            device = "auto";
        }
        if (threads < 0) {
            throw new IllegalArgumentException("threads must be >= 0, got " + threads);
        }
    }

    public static ExecutorOptions cpu() {
        return new ExecutorOptions("cpu", 0);
    }
}
