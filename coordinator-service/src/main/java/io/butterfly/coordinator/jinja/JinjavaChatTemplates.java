package io.butterfly.coordinator.jinja;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.LegacyOverrides;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.interpret.CollectionTooBigException;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.OutputTooBigException;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.objects.date.StrftimeFormatter;
import com.hubspot.jinjava.random.RandomNumberGeneratorStrategy;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ChatTemplateException;
import java.io.IOException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import jinjava.javax.el.CompositeELResolver;

/**
 * Chat templates rendered by Jinjava the way transformers renders them ({@code apply_chat_template}: Jinja with
 * {@code trim_blocks} and {@code lstrip_blocks}, a single trailing newline of the source dropped, {@code messages},
 * {@code add_generation_prompt}, {@code bos_token}, {@code eos_token}, {@code raise_exception},
 * {@code strftime_now}, {@code tools}, and {@code tojson} writing as Python's {@code json.dumps}: {@link PythonJsonFilter}).
 *
 * <p>A template is code from the model directory, so it runs in a sandbox: no file it could include, import or extend;
 * no Java method of a value ({@link PythonMethods}); bounded output, strings, lists, dicts, ranges and nesting; and a
 * time budget, checked before each node it renders, so that loops cannot hold the request thread. Jinjava records a
 * failure and renders on, where Jinja stops: a render here stops at its first fatal error ({@code raise_exception}, a
 * syntax error), so that a refused conversation does not run the rest of the template's loops.
 */
public final class JinjavaChatTemplates implements ChatTemplate.Compiler {

    /** Characters a render may write: far more than any prompt the coordinator takes. */
    static final long MAX_OUTPUT = 4L << 20;
    static final int MAX_COLLECTION = 10_000;
    static final int MAX_RANGE = 1_000;
    static final int MAX_DEPTH = 10;
    /**
     * Wall time a render may take. Templates of real models render in about a millisecond once the engine is warm
     * (the constructor warms it: a cold Jinjava takes a second or more for its first render on a busy machine).
     */
    static final Duration BUDGET = Duration.ofSeconds(5);

    /** The deadline of the render running on this thread (a template cannot reach it, unlike a context variable). */
    private static final ThreadLocal<Long> DEADLINE = new ThreadLocal<>();

    private final Jinjava jinjava;
    private final Duration budget;

    public JinjavaChatTemplates(Clock clock) {
        this(clock, BUDGET);
    }

    JinjavaChatTemplates(Clock clock, Duration budget) {
        this.budget = budget;
        CompositeELResolver resolvers = new CompositeELResolver();
        resolvers.add(new PythonMethods());
        resolvers.add(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_WRITE);
        JinjavaConfig config = JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                .withLegacyOverrides(LegacyOverrides.newBuilder()
                        .withParseWhitespaceControlStrictly(true)
                        .withUseTrimmingForNotesAndExpressions(true)
                        .withUseNaturalOperatorPrecedence(true)
                        .withEvaluateMapKeys(true)
                        .withIterateOverMapKeys(true)
                        .withUsePyishObjectMapper(true)
                        .withKeepNullableLoopValues(true)
                        .build())
                .withElResolver(resolvers)
                .withMaxOutputSize(MAX_OUTPUT)
                .withMaxStringLength(MAX_OUTPUT)
                .withMaxListSize(MAX_COLLECTION)
                .withMaxMapSize(MAX_COLLECTION)
                .withRangeLimit(MAX_RANGE)
                .withMaxRenderDepth(MAX_DEPTH)
                .withEnableRecursiveMacroCalls(false)
                // Jinjava renders an expression's value again when it holds "{{" or "{%" (on by default): a message
                // would be template code, a client's text run with the template's reach. Jinja prints values as text.
                .withNestedInterpretationEnabled(false)
                .withRandomNumberGeneratorStrategy(RandomNumberGeneratorStrategy.CONSTANT_ZERO)
                .withDateTimeProvider(clock::millis)
                .withTimeZone(clock.getZone())
                .withNodePreProcessor((node, interpreter) -> beforeNode(interpreter))
                .build();
        jinjava = new Jinjava(config);
        jinjava.setResourceLocator((name, encoding, interpreter) -> {
            throw new IOException("a chat template includes, imports and extends no other file: " + name);
        });
        jinjava.registerFunction(new ELFunctionDefinition("", "raise_exception", JinjavaChatTemplates.class,
                "raiseException", String.class));
        jinjava.getGlobalContext().registerFilter(new PythonJsonFilter());
        jinjava.getGlobalContext().registerExpTest(new PythonIterableTest());
        jinjava.registerFunction(new ELFunctionDefinition("", "strftime_now", JinjavaChatTemplates.class,
                "strftimeNow", String.class));
        warmUp();
    }

    /**
     * One render of what templates use, so that the first request's is not the engine's cold one. Not under the time
     * budget: a cold engine on a busy machine (or under a fuzzer's instrumentation) took more than 2 s.
     */
    private void warmUp() {
        new Template("{%- set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{{ '<' + m['role'] + '>'"
                + " + m.content | trim }}{% if not loop.last %}\n{% endif %}{% endfor %}{{ strftime_now('%d %b %Y') }}"
                + "{{ messages | selectattr('role', 'equalto', 'user') | list | length }}", "<s>", "</s>", null)
                .render(List.of(new ChatTemplate.Message("user", " warm ")));
    }

    @Override
    public ChatTemplate compile(String source, String bosToken, String eosToken) {
        return new Template(NotIsPrecedence.rewrite(withoutTrailingNewline(source)), bosToken, eosToken, budget);
    }

    /** Jinja drops one newline at the end of a template (keep_trailing_newline is off in transformers). */
    static String withoutTrailingNewline(String source) {
        if (source.endsWith("\r\n")) {
            return source.substring(0, source.length() - 2);
        }
        return source.endsWith("\n") ? source.substring(0, source.length() - 1) : source;
    }

    /** transformers' {@code raise_exception}: the template refuses the conversation with {@code message}. */
    public static String raiseException(String message) {
        throw new Raised(message);
    }

    /** transformers' {@code strftime_now}: the render's time (the coordinator's clock), formatted as Python does. */
    public static String strftimeNow(String format) {
        JinjavaConfig config = JinjavaInterpreter.getCurrent().getConfig();
        Instant now = Instant.ofEpochMilli(config.getDateTimeProvider().getCurrentTimeMillis());
        return StrftimeFormatter.format(now.atZone(config.getTimeZone()), format);
    }

    private static void beforeNode(JinjavaInterpreter interpreter) {
        Long deadline = DEADLINE.get();
        if (deadline != null && System.nanoTime() > deadline) {
            throw new OverBudget();
        }
        // The last error suffices: the Stopped each later node throws is fatal too.
        if (interpreter.getLastError().filter(e -> e.getSeverity() == TemplateError.ErrorType.FATAL).isPresent()) {
            throw new Stopped();
        }
    }

    /** What {@code raise_exception} throws, found again among the render's errors. */
    private static final class Raised extends RuntimeException {
        Raised(String message) {
            super(message, null, false, false);
        }
    }

    /** What every node after the render's first fatal error throws; that error is the one reported. */
    private static final class Stopped extends RuntimeException {
        Stopped() {
            super("stopped at an earlier error", null, false, false);
        }
    }

    private static final class OverBudget extends RuntimeException {
        OverBudget() {
            super("over the time budget", null, false, false);
        }
    }

    private final class Template implements ChatTemplate {

        private final String source;
        private final String bosToken;
        private final String eosToken;
        /** Null: no time limit (the warm-up). */
        private final Duration budget;

        Template(String source, String bosToken, String eosToken, Duration budget) {
            this.source = source;
            this.bosToken = bosToken;
            this.eosToken = eosToken;
            this.budget = budget;
        }

        @Override
        public String source() {
            return source;
        }

        @Override
        public String render(List<Message> messages, List<Object> tools) {
            Map<String, Object> bindings = new HashMap<>();
            bindings.put("messages", messages(messages));
            if (tools != null) {
                bindings.put("tools", tools);
            }
            bindings.put("add_generation_prompt", true);
            if (bosToken != null) {
                bindings.put("bos_token", bosToken);
            }
            if (eosToken != null) {
                bindings.put("eos_token", eosToken);
            }
            // Defined as in transformers, where they are globals: templates ask `strftime_now is defined`.
            bindings.put("raise_exception", "raise_exception");
            bindings.put("strftime_now", "strftime_now");
            RenderResult result;
            if (budget != null) {
                DEADLINE.set(System.nanoTime() + budget.toNanos());
            }
            try {
                result = jinjava.renderForResult(source, bindings);
            } catch (RuntimeException e) {
                throw failure(e);
            } finally {
                DEADLINE.remove();
            }
            List<String> problems = new ArrayList<>();
            for (TemplateError error : result.getErrors()) {
                if (error.getSeverity() != TemplateError.ErrorType.FATAL || find(error.getException(), Stopped.class) != null) {
                    continue;
                }
                Raised raised = find(error.getException(), Raised.class);
                if (raised != null) {
                    throw ChatTemplateException.refused(raised.getMessage());
                }
                if (tooLarge(error.getReason(), error.getException())) {
                    throw overLimit();
                }
                OverBudget over = find(error.getException(), OverBudget.class);
                problems.add(over != null ? overBudget() : describe(error));
            }
            if (!problems.isEmpty()) {
                throw ChatTemplateException.failed("the model's chat template failed: " + String.join("; ",
                        Set.copyOf(problems)), null);
            }
            return result.getOutput();
        }

        private ChatTemplateException failure(RuntimeException e) {
            Raised raised = find(e, Raised.class);
            if (raised != null) {
                return ChatTemplateException.refused(raised.getMessage());
            }
            if (tooLarge(null, e)) {
                return overLimit();
            }
            OverBudget over = find(e, OverBudget.class);
            return ChatTemplateException.failed("the model's chat template failed: "
                    + (over != null ? overBudget() : e.getMessage()), e);
        }

        private ChatTemplateException overLimit() {
            return ChatTemplateException.overLimit("the conversation renders past the chat template engine's size limits"
                    + " (" + (MAX_OUTPUT >> 20) + " MiB of output, lists of " + MAX_COLLECTION + ")");
        }

        private String overBudget() {
            return "it ran for more than " + budget.toMillis() + " ms";
        }
    }

    /**
     * Whether the render failed on a size limit of the sandbox: what the conversation made too large (its output, a
     * list), not a defect of the template.
     */
    private static boolean tooLarge(TemplateError.ErrorReason reason, Throwable e) {
        return reason == TemplateError.ErrorReason.OUTPUT_TOO_BIG || reason == TemplateError.ErrorReason.COLLECTION_TOO_BIG
                || find(e, OutputTooBigException.class) != null || find(e, CollectionTooBigException.class) != null;
    }

    /** Each message as a dict, with the keys the client gave. */
    private static List<Map<String, Object>> messages(List<ChatTemplate.Message> messages) {
        List<Map<String, Object>> out = new ArrayList<>(messages.size());
        for (ChatTemplate.Message m : messages) {
            Map<String, Object> dict = new LinkedHashMap<>();
            dict.put("role", m.role());
            dict.put("content", m.content());
            if (m.name() != null) {
                dict.put("name", m.name());
            }
            if (m.toolCalls() != null) {
                List<Map<String, Object>> calls = new ArrayList<>(m.toolCalls().size());
                for (ChatTemplate.ToolCall c : m.toolCalls()) {
                    Map<String, Object> function = new LinkedHashMap<>();
                    function.put("name", c.name());
                    function.put("arguments", PythonJsonFilter.objectOrString(c.arguments()));
                    Map<String, Object> call = new LinkedHashMap<>();
                    call.put("id", c.id());
                    call.put("type", "function");
                    call.put("function", function);
                    calls.add(call);
                }
                dict.put("tool_calls", calls);
            }
            if (m.toolCallId() != null) {
                dict.put("tool_call_id", m.toolCallId());
            }
            out.add(dict);
        }
        return out;
    }

    private static String describe(TemplateError error) {
        String where = error.getLineno() > 0 ? " (line " + error.getLineno() + ")" : "";
        return error.getMessage() + where;
    }

    private static <T extends Throwable> T find(Throwable t, Class<T> type) {
        for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) {
                return type.cast(c);
            }
        }
        return null;
    }
}
