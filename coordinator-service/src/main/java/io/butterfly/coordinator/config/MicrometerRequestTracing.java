package io.butterfly.coordinator.config;

import io.butterfly.coordinator.inference.RequestTracing;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.HashMap;
import java.util.Map;

/**
 * Requests' traces with Micrometer Tracing (OpenTelemetry underneath): a {@code generate} span per request, child of
 * the HTTP request's span, and a {@code pipeline step} span per step, whose context the step carries to the stages.
 * A request the sampler leaves out costs nothing further: its steps carry no context, so the stages trace nothing.
 */
final class MicrometerRequestTracing implements RequestTracing {

    private final Tracer tracer;
    private final Propagator propagator;

    MicrometerRequestTracing(Tracer tracer, Propagator propagator) {
        this.tracer = tracer;
        this.propagator = propagator;
    }

    @Override
    public Trace start(String taskId) {
        Span request = tracer.nextSpan().name("generate").tag("butterfly.task_id", taskId).start();
        return Boolean.TRUE.equals(request.context().sampled()) ? new SpanTrace(request) : Trace.NONE;
    }

    /** Touched on the engine's thread only, after {@link #start}. */
    private final class SpanTrace implements Trace {

        private final Span request;
        /** Open step spans by micro-batch (several while the request replays its history). */
        private final Map<Long, Span> steps = new HashMap<>();

        SpanTrace(Span request) {
            this.request = request;
        }

        @Override
        public Map<String, String> stepStarted(long batchId, int position, int tokens, int batchSequences) {
            Span step = tracer.spanBuilder().setParent(request.context()).kind(Span.Kind.PRODUCER).name("pipeline step")
                    .tag("butterfly.batch_id", batchId)
                    .tag("butterfly.position", position).tag("butterfly.tokens", tokens)
                    .tag("butterfly.batch_sequences", batchSequences).start();
            steps.put(batchId, step);
            Map<String, String> context = new HashMap<>(4);
            propagator.inject(step.context(), context, Map::put);
            return context;
        }

        @Override
        public void stepEnded(long batchId) {
            Span step = steps.remove(batchId);
            if (step != null) {
                step.end();
            }
        }

        @Override
        public void stepFailed(long batchId, Throwable failure) {
            Span step = steps.remove(batchId);
            if (step != null) {
                step.error(failure);
                step.end();
            }
        }

        @Override
        public void ended(String finishReason, Throwable failure, int generatedTokens) {
            for (Span step : steps.values()) {
                if (failure != null) {
                    step.error(failure);
                }
                step.end();
            }
            steps.clear();
            request.tag("butterfly.generated_tokens", generatedTokens);
            if (finishReason != null) {
                request.tag("butterfly.finish_reason", finishReason);
            }
            if (failure != null) {
                request.error(failure);
            }
            request.end();
        }
    }
}
