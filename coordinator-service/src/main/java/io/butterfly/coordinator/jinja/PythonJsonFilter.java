package io.butterfly.coordinator.jinja;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.filter.Filter;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.core.util.DefaultIndenter;
import tools.jackson.core.util.DefaultPrettyPrinter;
import tools.jackson.core.util.Separators;
import tools.jackson.core.util.Separators.Spacing;
import tools.jackson.databind.json.JsonMapper;

/**
 * Jinja's {@code tojson} as transformers defines it for chat templates: Python's {@code json.dumps(x,
 * ensure_ascii=False, indent=indent)}, so a template that prints the tools (Qwen2.5, Llama 3.1+, Mistral) writes the
 * text the model was trained on: {@code ", "} and {@code ": "} between items without {@code indent}, one item a line
 * with it ({@code tojson(indent=4)}), keys in the order given. Jinjava's own filter writes compact JSON.
 */
final class PythonJsonFilter implements Filter {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Override
    public String getName() {
        return "tojson";
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
        return dumps(var, indent(args, null));
    }

    @Override
    public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
        Object indent = kwargs.get("indent");
        if (indent == null && args.length > 0) {
            indent = args[0];
        }
        return dumps(var, indent == null ? null : Integer.valueOf(indent.toString()));
    }

    private static Integer indent(String[] args, Integer otherwise) {
        return args.length > 0 && args[0] != null ? Integer.valueOf(args[0]) : otherwise;
    }

    /** {@code json.dumps(value, ensure_ascii=False, indent=indent)}. */
    static String dumps(Object value, Integer indent) {
        DefaultPrettyPrinter printer;
        if (indent == null) {
            printer = new DefaultPrettyPrinter(new Separators("", ':', Spacing.AFTER, ',', Spacing.AFTER, "", ',',
                    Spacing.AFTER, ""));
            printer.indentObjectsWith(new DefaultPrettyPrinter.NopIndenter());
            printer.indentArraysWith(new DefaultPrettyPrinter.NopIndenter());
        } else {
            printer = new DefaultPrettyPrinter(new Separators("", ':', Spacing.AFTER, ',', Spacing.NONE, "", ',',
                    Spacing.NONE, ""));
            DefaultIndenter lines = new DefaultIndenter(" ".repeat(indent), "\n");
            printer.indentObjectsWith(lines);
            printer.indentArraysWith(lines);
        }
        return JSON.writer().with(printer).writeValueAsString(value);
    }

    /**
     * A tool call's arguments as transformers' templates take them: the JSON object a client's string holds, as a
     * map, or the string itself when it holds no object.
     */
    static Object objectOrString(String arguments) {
        if (arguments == null) {
            return null;
        }
        try {
            Object parsed = JSON.readValue(arguments, Object.class);
            return parsed instanceof Map ? parsed : arguments;
        } catch (JacksonException notJson) {
            return arguments;
        }
    }
}
