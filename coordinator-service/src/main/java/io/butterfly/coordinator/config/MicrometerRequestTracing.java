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
        private Span step;

        SpanTrace(Span request) {
            this.request = request;
        }

        @Override
        public Map<String, String> stepStarted(long batchId, int position, int tokens, int batchSequences) {
            step = tracer.spanBuilder().setParent(request.context()).kind(Span.Kind.PRODUCER).name("pipeline step")
                    .tag("butterfly.batch_id", batchId)
                    .tag("butterfly.position", position).tag("butterfly.tokens", tokens)
                    .tag("butterfly.batch_sequences", batchSequences).start();
            Map<String, String> context = new HashMap<>(4);
            propagator.inject(step.context(), context, Map::put);
            return context;
        }

        @Override
        public void stepEnded() {
            if (step != null) {
                step.end();
                step = null;
            }
        }

        @Override
        public void ended(String finishReason, Throwable failure, int generatedTokens) {
            if (step != null) {
                if (failure != null) {
                    step.error(failure);
                }
                stepEnded();
            }
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
