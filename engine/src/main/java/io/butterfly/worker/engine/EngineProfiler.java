package io.butterfly.worker.engine;

import ai.djl.pytorch.jni.JniUtils;
import java.nio.file.Path;

/**
 * libtorch's profiler around work on an engine thread, for {@code butterfly profile}: every operation a step runs,
 * inside the scopes of a partition loaded with {@link ExecutorOptions#withProfiling}, written as a Chrome trace
 * ({@code chrome://tracing}, Perfetto). The profiler is process-wide: one recording at a time.
 */
public final class EngineProfiler {

    private EngineProfiler() {
    }

    /** Starts recording the operations {@code engine} runs from now on. */
    public static void start(EngineThread engine) {
        engine.call(() -> {
            JniUtils.startProfile(false, false, false);
            return null;
        });
    }

    /** Stops recording on {@code engine} and writes what was recorded to {@code trace}. */
    public static void stop(EngineThread engine, Path trace) {
        engine.call(() -> {
            JniUtils.stopProfile(trace.toAbsolutePath().toString());
            return null;
        });
    }
}
