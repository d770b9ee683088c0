package io.butterfly.worker.config;

import io.butterfly.worker.pipeline.Step;
import io.butterfly.worker.pipeline.StepTracing;
import io.micrometer.tracing.Span;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * This stage's {@code stage step} spans with Micrometer Tracing: for each sequence of a step whose slice carries a
 * trace context, a span whose parent is that context (the coordinator's span of the step), never the current span:
 * the step arrived on a stream that serves many requests.
 */
final class MicrometerStepTracing implements StepTracing {

    private final Tracer tracer;
    private final Propagator propagator;

    MicrometerStepTracing(Tracer tracer, Propagator propagator) {
        this.tracer = tracer;
        this.propagator = propagator;
    }

    @Override
    public Spans started(Step step, String nodeId) {
        List<Span> spans = null;
        for (Step.Slice s : step.sequences()) {
            if (s.traceContext().isEmpty()) {
                continue;
            }
            Span span = propagator.extract(s.traceContext(), Map::get).kind(Span.Kind.CONSUMER).name("stage step")
                    .tag("butterfly.node_id", nodeId).tag("butterfly.task_id", s.sequenceId())
                    .tag("butterfly.position", s.position()).tag("butterfly.tokens", s.numTokens())
                    .tag("butterfly.batch_sequences", step.sequences().size()).start();
            if (spans == null) {
                spans = new ArrayList<>(step.sequences().size());
            }
            spans.add(span);
        }
        if (spans == null) {
            return Spans.NONE;
        }
        List<Span> started = spans;
        return failure -> {
            for (Span span : started) {
                if (failure != null) {
                    span.error(failure);
                }
                span.end();
            }
        };
    }
}
