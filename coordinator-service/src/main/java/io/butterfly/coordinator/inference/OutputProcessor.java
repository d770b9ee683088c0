package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.ServingMetrics;
import java.util.function.LongSupplier;

/**
 * The output processor, outside the engine core (as vLLM's): what the core tells of each request becomes its text
 * (detokenized token by token, stop strings found), its listener's tokens and its answer, its task's events in the
 * journal, its trace and its metrics. Each request's part of this is its {@link RequestOutput}; this holds what they
 * share.
 */
final class OutputProcessor {

    private final EnginePipelines engine;
    private final TaskJournal journal;
    private final ServingMetrics metrics;
    private final RequestTracing tracing;
    private final LongSupplier clockMillis;
    /** Tokens chosen since start; written on the engine's thread only, read by anyone. */
    private volatile long generatedTokens;

    /** The newest tasks' transcripts this replica keeps (about 100 KB each at 1000 tokens). */
    static final int TRANSCRIPTS_KEPT = 1000;
    private final Transcripts transcripts = new Transcripts(TRANSCRIPTS_KEPT);

    OutputProcessor(EnginePipelines engine, TaskJournal journal, ServingMetrics metrics, RequestTracing tracing,
                    LongSupplier clockMillis) {
        this.engine = engine;
        this.journal = journal;
        this.metrics = metrics;
        this.tracing = tracing;
        this.clockMillis = clockMillis;
    }

    EnginePipelines engine() {
        return engine;
    }

    Transcripts transcripts() {
        return transcripts;
    }

    TaskJournal journal() {
        return journal;
    }

    ServingMetrics metrics() {
        return metrics;
    }

    RequestTracing tracing() {
        return tracing;
    }

    long nowMillis() {
        return clockMillis.getAsLong();
    }

    /** One more token chosen (on the engine's thread). */
    @SuppressWarnings("NonAtomicOperationOnVolatileField") // one writer
    void counted() {
        generatedTokens++;
    }

    /** Tokens generated since the engine started, counted as they are chosen. */
    long generatedTokens() {
        return generatedTokens;
    }
}
