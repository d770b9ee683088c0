package io.butterfly.coordinator.structured;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * Compiles a JSON schema into the grammar the matcher walks. The subset is what OpenAI's strict structured outputs
 * take: {@code type} (object, array, string, number, integer, boolean, null, or a list of them), {@code properties},
 * {@code required}, {@code additionalProperties} (false, true, or a schema for an object without properties),
 * {@code enum}, {@code const}, {@code anyOf}, {@code items}, {@code minItems}, {@code maxItems}, {@code maxLength},
 * {@code $defs} / {@code definitions} with {@code $ref} ({@code #}, {@code #/$defs/x}, {@code #/definitions/x},
 * recursion included); annotations ({@code title}, {@code description}, {@code default}, {@code examples},
 * {@code $schema}, {@code $id}, {@code $comment}) are ignored. Any other keyword is refused, naming it, rather than
 * ignored (its constraint would not hold). With {@code strict}, as OpenAI's strict mode, every object must say
 * {@code additionalProperties: false} and require every property.
 *
 * <p>What is generated: compact JSON (no whitespace between tokens), an object's properties in their declared order,
 * numbers of at most 16 integer and 16 fraction digits and a 3-digit exponent.
 */
public final class JsonSchemaGrammar {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final Set<String> ANNOTATIONS = Set.of("title", "description", "default", "examples", "$schema",
            "$id", "$comment", "$defs", "definitions");
    private static final Set<String> KEYWORDS = Set.of("type", "properties", "required", "additionalProperties",
            "enum", "const", "anyOf", "items", "minItems", "maxItems", "maxLength", "$ref");
    private static final Set<String> TYPES = Set.of("object", "array", "string", "number", "integer", "boolean",
            "null");

    private final boolean strict;
    private final Map<String, Node> definitions = new HashMap<>();

    private JsonSchemaGrammar(boolean strict) {
        this.strict = strict;
    }

    /** The grammar of any JSON object ({@code response_format: json_object}). */
    public static Grammar anyObject() {
        Node.OneOf any = Node.anyValue();
        return new Grammar(any.options.get(0));
    }

    /** The grammar of the values {@code schema} accepts. */
    public static Grammar compile(JsonNode schema, boolean strict) {
        if (schema == null || !schema.isObject()) {
            throw new SchemaException("#", "a schema must be a JSON object");
        }
        JsonSchemaGrammar c = new JsonSchemaGrammar(strict);
        for (String defs : List.of("$defs", "definitions")) {
            JsonNode d = schema.get(defs);
            if (d != null) {
                if (!d.isObject()) {
                    throw new SchemaException("#/" + defs, "must be an object of schemas");
                }
                for (String name : d.propertyNames()) {
                    c.definitions.put("#/" + defs + "/" + name, null); // declared: a $ref may name it
                }
            }
        }
        c.definitions.put("#", null);
        Node top = c.node(schema, "#");
        c.definitions.put("#", top);
        for (String defs : List.of("$defs", "definitions")) {
            JsonNode d = schema.get(defs);
            if (d != null) {
                for (String name : d.propertyNames()) {
                    String path = "#/" + defs + "/" + name;
                    c.definitions.put(path, c.node(d.get(name), path));
                }
            }
        }
        return new Grammar(top);
    }

    private Node node(JsonNode s, String path) {
        if (s == null || !s.isObject()) {
            if (s != null && s.isBoolean() && s.booleanValue()) {
                return Node.anyValue();
            }
            throw new SchemaException(path, "a schema must be a JSON object");
        }
        for (String key : s.propertyNames()) {
            if (!KEYWORDS.contains(key) && !ANNOTATIONS.contains(key)) {
                throw new SchemaException(path + "/" + key, "the keyword " + key + " is not supported (supported: "
                        + String.join(", ", KEYWORDS) + ", $defs)");
            }
            if (key.equals("$defs") || key.equals("definitions")) {
                if (!path.equals("#")) {
                    throw new SchemaException(path + "/" + key, key + " is supported at the schema's root only");
                }
            }
        }
        if (s.has("$ref")) {
            String ref = s.get("$ref").asString(null);
            if (ref == null || !definitions.containsKey(ref)) {
                throw new SchemaException(path + "/$ref", "names no definition: " + s.get("$ref")
                        + " (refer to #, #/$defs/name or #/definitions/name)");
            }
            return new Node.Ref(ref, definitions);
        }
        if (s.has("const")) {
            return new Node.Literal(JSON.writeValueAsString(s.get("const")));
        }
        if (s.has("enum")) {
            JsonNode values = s.get("enum");
            if (!values.isArray() || values.isEmpty()) {
                throw new SchemaException(path + "/enum", "must be a non-empty array");
            }
            Node.OneOf options = new Node.OneOf();
            for (JsonNode v : values) {
                options.options.add(new Node.Literal(JSON.writeValueAsString(v)));
            }
            return options;
        }
        if (s.has("anyOf")) {
            JsonNode alts = s.get("anyOf");
            if (!alts.isArray() || alts.isEmpty()) {
                throw new SchemaException(path + "/anyOf", "must be a non-empty array of schemas");
            }
            Node.OneOf options = new Node.OneOf();
            for (int i = 0; i < alts.size(); i++) {
                options.options.add(node(alts.get(i), path + "/anyOf/" + i));
            }
            return options;
        }
        JsonNode type = s.get("type");
        if (type == null) {
            if (s.has("properties") || s.has("additionalProperties") || s.has("required")) {
                return object(s, path);
            }
            if (s.has("items")) {
                return array(s, path);
            }
            return Node.anyValue();
        }
        if (type.isArray()) {
            Node.OneOf options = new Node.OneOf();
            for (JsonNode t : type) {
                options.options.add(typed(s, t.asString(null), path));
            }
            if (options.options.isEmpty()) {
                throw new SchemaException(path + "/type", "must name at least one type");
            }
            return options;
        }
        return typed(s, type.asString(null), path);
    }

    private Node typed(JsonNode s, String type, String path) {
        if (type == null || !TYPES.contains(type)) {
            throw new SchemaException(path + "/type", "must be one of " + TYPES + ", got " + type);
        }
        switch (type) {
            case "object":
                return object(s, path);
            case "array":
                return array(s, path);
            case "string":
                return new Node.Text(count(s, "maxLength", path, -1));
            case "number":
                return new Node.Number(false);
            case "integer":
                return new Node.Number(true);
            case "boolean":
                Node.OneOf b = new Node.OneOf();
                b.options.add(new Node.Literal("true"));
                b.options.add(new Node.Literal("false"));
                return b;
            default:
                return new Node.Literal("null");
        }
    }

    private Node object(JsonNode s, String path) {
        JsonNode props = s.get("properties");
        JsonNode additional = s.get("additionalProperties");
        if (props != null && !props.isObject()) {
            throw new SchemaException(path + "/properties", "must be an object of schemas");
        }
        Set<String> required = new HashSet<>();
        JsonNode req = s.get("required");
        if (req != null) {
            if (!req.isArray()) {
                throw new SchemaException(path + "/required", "must be an array of property names");
            }
            for (JsonNode r : req) {
                if (!r.isString() || props == null || !props.has(r.stringValue())) {
                    throw new SchemaException(path + "/required", "names no property: " + r);
                }
                required.add(r.stringValue());
            }
        }
        if (strict) {
            if (additional == null || !additional.isBoolean() || additional.booleanValue()) {
                throw new SchemaException(path + "/additionalProperties", "strict mode needs additionalProperties:"
                        + " false on every object");
            }
            if (props != null && required.size() != props.size()) {
                throw new SchemaException(path + "/required", "strict mode needs every property required");
            }
        }
        if (props == null || props.isEmpty()) {
            if (additional != null && additional.isBoolean() && !additional.booleanValue()) {
                return new Node.Literal("{}");
            }
            Node values = additional == null || additional.isBoolean() ? Node.anyValue()
                    : node(additional, path + "/additionalProperties");
            return new Node.Dict(values);
        }
        if (additional != null && !additional.isBoolean()) {
            throw new SchemaException(path + "/additionalProperties", "a schema here is supported only for an object"
                    + " without properties");
        }
        List<Node.Field> fields = new ArrayList<>();
        for (String name : props.propertyNames()) {
            fields.add(new Node.Field(name, new Node.Literal(JSON.writeValueAsString(name) + ":"),
                    node(props.get(name), path + "/properties/" + name), required.contains(name)));
        }
        return new Node.Fields(List.copyOf(fields));
    }

    private Node array(JsonNode s, String path) {
        JsonNode items = s.get("items");
        Node item = items == null ? Node.anyValue() : node(items, path + "/items");
        int min = count(s, "minItems", path, 0);
        int max = count(s, "maxItems", path, -1);
        if (max >= 0 && max < min) {
            throw new SchemaException(path + "/maxItems", "is less than minItems");
        }
        return new Node.Items(item, min, max);
    }

    private static int count(JsonNode s, String key, String path, int absent) {
        JsonNode v = s.get(key);
        if (v == null) {
            return absent;
        }
        if (!v.isIntegralNumber() || v.asLong() < 0 || v.asLong() > 1_000_000) {
            throw new SchemaException(path + "/" + key, "must be a whole number from 0 to 1000000");
        }
        return v.asInt();
    }
}
