package io.butterfly.coordinator.tools;

import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.ResponseFormat;
import io.butterfly.coordinator.structured.JsonSchemaGrammar;
import io.butterfly.coordinator.structured.SchemaException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * A request's {@code tools}, {@code tool_choice} and {@code parallel_tool_calls}, read as OpenAI's chat API takes
 * them; every refusal names the field. With {@code required} or a named function the reply is constrained by the
 * structured-output matcher ({@link #constraint}): to the function's arguments (a value of its {@code parameters}
 * schema), or to a list of calls ({@code [{"name": ..., "arguments": {...}}]}) of the given functions, as vLLM
 * constrains them.
 *
 * @param functions what the model may call, in the order given
 * @param choice    whether it may, must, or must not call one
 * @param parallel  whether it may make several calls in one reply
 * @param sent      the tools as the client sent them, for the chat template (plain maps and lists)
 */
public record Tools(List<Function> functions, ToolChoice choice, boolean parallel, List<Object> sent) {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Set<String> TOOL_KEYS = Set.of("type", "function");
    private static final Set<String> FUNCTION_KEYS = Set.of("name", "description", "parameters", "strict");

    /** No tools: the model only answers. */
    public static final Tools NONE = new Tools(List.of(), ToolChoice.NONE, true, null);

    /**
     * A function the model may call.
     *
     * @param parameters its arguments' JSON schema ({@code {"type": "object"}} when the client gave none)
     * @param strict     the schema meets OpenAI's strict mode rules (checked as for {@code response_format})
     */
    public record Function(String name, String description, JsonNode parameters, boolean strict) {
    }

    /** Whether the model is shown the tools and its reply read for calls. */
    public boolean active() {
        return choice.mode() != ToolChoice.Mode.NONE;
    }

    /** The tools for the chat template, or null when it is not to show any. */
    public List<Object> forTemplate() {
        return active() ? sent : null;
    }

    /**
     * Reads the fields; absent or null {@code tools} is none, and then {@code tool_choice} may only be {@code none}
     * (or absent). {@code tool_choice} defaults to {@code auto} when there are tools, as in OpenAI's API.
     */
    public static Tools parse(JsonNode tools, JsonNode toolChoice, Boolean parallelToolCalls) {
        boolean none = tools == null || tools.isNull() || tools.isArray() && tools.isEmpty();
        if (none) {
            if (toolChoice != null && !toolChoice.isNull() && !(toolChoice.isString()
                    && toolChoice.stringValue().equals("none"))) {
                throw new InvalidRequestException("tool_choice", "tool_choice needs tools: give the functions the "
                        + "model may call in tools");
            }
            return NONE;
        }
        if (!tools.isArray()) {
            throw new InvalidRequestException("tools", "tools must be a list of {\"type\": \"function\", \"function\": "
                    + "{...}}");
        }
        List<Function> functions = new ArrayList<>(tools.size());
        Set<String> names = new HashSet<>();
        for (int i = 0; i < tools.size(); i++) {
            Function f = function(tools.get(i), "tools[" + i + "]");
            if (!names.add(f.name())) {
                throw new InvalidRequestException("tools[" + i + "].function.name", "two tools are named " + f.name());
            }
            functions.add(f);
        }
        ToolChoice choice = choice(toolChoice, names);
        @SuppressWarnings("unchecked")
        List<Object> sent = JSON.convertValue(tools, List.class);
        Tools parsed = new Tools(List.copyOf(functions), choice, parallelToolCalls == null || parallelToolCalls, sent);
        if (choice.mode() == ToolChoice.Mode.REQUIRED) {
            try {
                parsed.constraint().grammar("tools");
            } catch (InvalidRequestException e) {
                // each schema compiled alone; together, a $ref of one would point into the list of calls
                throw new InvalidRequestException("tool_choice", "tool_choice required needs schemas without $ref or "
                        + "$defs: " + e.getMessage());
            }
        }
        return parsed;
    }

    private static Function function(JsonNode tool, String field) {
        if (tool == null || !tool.isObject()) {
            throw new InvalidRequestException(field, "a tool must be an object {\"type\": \"function\", \"function\": "
                    + "{...}}");
        }
        for (String key : tool.propertyNames()) {
            if (!TOOL_KEYS.contains(key)) {
                throw new InvalidRequestException(field + "." + key, "unknown field " + key + " in a tool");
            }
        }
        if (!"function".equals(tool.path("type").asString(null))) {
            throw new InvalidRequestException(field + ".type", "type must be function (the only kind of tool)");
        }
        JsonNode f = tool.get("function");
        String at = field + ".function";
        if (f == null || !f.isObject()) {
            throw new InvalidRequestException(at, "function must be an object with a name");
        }
        for (String key : f.propertyNames()) {
            if (!FUNCTION_KEYS.contains(key)) {
                throw new InvalidRequestException(at + "." + key, "unknown field " + key + " in a function");
            }
        }
        JsonNode name = f.get("name");
        if (name == null || !name.isString() || !name.stringValue().matches("[A-Za-z0-9_-]{1,64}")) {
            throw new InvalidRequestException(at + ".name", "name must be 1-64 letters, digits, _ or -");
        }
        JsonNode description = f.get("description");
        if (description != null && !description.isNull() && !description.isString()) {
            throw new InvalidRequestException(at + ".description", "description must be a string");
        }
        JsonNode strict = f.get("strict");
        if (strict != null && !strict.isNull() && !strict.isBoolean()) {
            throw new InvalidRequestException(at + ".strict", "strict must be true or false");
        }
        JsonNode parameters = f.get("parameters");
        if (parameters == null || parameters.isNull()) {
            parameters = JSON.createObjectNode().put("type", "object");
        } else if (!parameters.isObject()) {
            throw new InvalidRequestException(at + ".parameters", "parameters must be a JSON schema (an object)");
        }
        boolean isStrict = strict != null && strict.asBoolean(false);
        try {
            JsonSchemaGrammar.compile(parameters, isStrict); // refused now, naming where, not when the call is made
        } catch (SchemaException e) {
            throw new InvalidRequestException(at + ".parameters", "the schema " + e.getMessage()
                    .replaceFirst("^#", "at #"));
        }
        return new Function(name.stringValue(), description == null || description.isNull() ? null
                : description.stringValue(), parameters, isStrict);
    }

    private static ToolChoice choice(JsonNode c, Set<String> names) {
        if (c == null || c.isNull()) {
            return ToolChoice.AUTO;
        }
        if (c.isString()) {
            return switch (c.stringValue()) {
                case "none" -> ToolChoice.NONE;
                case "auto" -> ToolChoice.AUTO;
                case "required" -> ToolChoice.REQUIRED;
                default -> throw new InvalidRequestException("tool_choice", "tool_choice must be none, auto, required "
                        + "or {\"type\": \"function\", \"function\": {\"name\": ...}}, got " + c.stringValue());
            };
        }
        if (!c.isObject() || !"function".equals(c.path("type").asString(null))) {
            throw new InvalidRequestException("tool_choice", "tool_choice must be none, auto, required or "
                    + "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        String name = c.path("function").path("name").asString(null);
        if (name == null) {
            throw new InvalidRequestException("tool_choice.function.name", "name the function to call");
        }
        if (!names.contains(name)) {
            throw new InvalidRequestException("tool_choice.function.name", "no tool is named " + name);
        }
        return new ToolChoice(ToolChoice.Mode.NAMED, name);
    }

    /**
     * The structured output a {@code required} or named choice constrains the reply to, or null: a named function's
     * arguments; for {@code required}, a list of one call (more when {@code parallel_tool_calls}) of any function,
     * each {@code {"name": <one of them>, "arguments": <its schema>}}.
     */
    public ResponseFormat constraint() {
        if (choice.mode() == ToolChoice.Mode.NAMED) {
            Function f = function(choice.function());
            return new ResponseFormat("json_schema", f.name(), f.parameters(), f.strict());
        }
        if (choice.mode() != ToolChoice.Mode.REQUIRED) {
            return null;
        }
        ArrayNode options = JSON.createArrayNode();
        boolean strict = true;
        for (Function f : functions) {
            ObjectNode call = options.addObject();
            call.put("type", "object");
            ObjectNode props = call.putObject("properties");
            props.putObject("name").put("const", f.name());
            props.set("arguments", f.parameters());
            call.putArray("required").add("name").add("arguments");
            call.put("additionalProperties", false);
            strict &= f.strict();
        }
        ObjectNode calls = JSON.createObjectNode();
        calls.put("type", "array");
        calls.putObject("items").set("anyOf", options);
        calls.put("minItems", 1);
        if (!parallel) {
            calls.put("maxItems", 1);
        }
        return new ResponseFormat("json_schema", "tool_calls", calls, strict);
    }

    /** The function named {@code name} (one of {@link #functions}). */
    public Function function(String name) {
        return functions.stream().filter(f -> f.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no tool " + name));
    }
}
