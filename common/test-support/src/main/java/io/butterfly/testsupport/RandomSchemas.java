package io.butterfly.testsupport;

import java.util.Iterator;
import java.util.Random;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Seeded random JSON schemas of the subset structured outputs support (docs/api.md: type, properties, required,
 * additionalProperties, enum, const, anyOf, items, minItems, maxItems, maxLength), bounded so that any value of one
 * ends, and a validator of that subset written apart from the coordinator's matcher: what the constrained decoder's
 * tests (the matcher's own, and the cluster's on a random model) generate against and check with.
 */
public final class RandomSchemas {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    /** Property names; some with characters of two to four UTF-8 bytes ('é', '中', '🦋'), which few tokens spell. */
    private static final String[] NAMES = {"a", "id", "name", "x", "ab", "é", "say \"hi\"", "kids", "\u4e2d",
            "\ud83e\udd8b"};

    /**
     * A schema whose top is an object. {@code strict}: as OpenAI's strict mode, every object requires all its
     * properties and says {@code additionalProperties: false}.
     */
    public static ObjectNode object(Random r, boolean strict) {
        return schema(r, 0, strict, true);
    }

    private static ObjectNode schema(Random r, int depth, boolean strict, boolean top) {
        ObjectNode s = JSON.createObjectNode();
        int kind = top ? 0 : r.nextInt(depth >= 2 ? 7 : 10);
        switch (kind) {
            case 0, 7 -> {
                s.put("type", "object");
                ObjectNode props = s.putObject("properties");
                ArrayNode required = JSON.createArrayNode();
                int n = 1 + r.nextInt(4);
                for (int i = 0; i < n; i++) {
                    String name = NAMES[r.nextInt(NAMES.length)];
                    if (props.has(name)) {
                        continue;
                    }
                    props.set(name, schema(r, depth + 1, strict, false));
                    if (strict || r.nextBoolean()) {
                        required.add(name);
                    }
                }
                s.set("required", required);
                if (strict || r.nextBoolean()) {
                    s.put("additionalProperties", false);
                }
            }
            case 1 -> s.put("type", "string").put("maxLength", r.nextInt(6));
            case 2 -> s.put("type", r.nextBoolean() ? "integer" : "number");
            case 3 -> s.put("type", "boolean");
            case 4 -> {
                ArrayNode e = s.putArray("enum");
                e.add("red").add(7).add(JSON.nullNode()).add("r\u00e9d\n").add("\u7ea2\ud83d\udd34");
            }
            case 5 -> {
                ArrayNode any = s.putArray("anyOf");
                any.add(schema(r, depth + 1, strict, false));
                any.add(JSON.createObjectNode().put("type", "null"));
            }
            case 6 -> s.set("const", JSON.readTree("{\"k\":[1,\"two\"]}"));
            default -> {
                s.put("type", "array");
                s.set("items", schema(r, depth + 1, strict, false));
                int min = r.nextInt(2);
                s.put("minItems", min).put("maxItems", min + r.nextInt(3));
            }
        }
        return s;
    }

    /** Whether {@code v} is a value of {@code schema} (of the subset; {@code $ref} within it resolved). */
    public static boolean validates(JsonNode schema, JsonNode v) {
        return validate(schema, v, schema);
    }

    private static boolean validate(JsonNode s, JsonNode v, JsonNode root) {
        if (s.has("$ref")) {
            String ref = s.get("$ref").stringValue();
            return validate(ref.equals("#") ? root : root.at(ref.substring(1)), v, root);
        }
        if (s.has("const")) {
            return s.get("const").equals(v);
        }
        if (s.has("enum")) {
            for (JsonNode e : s.get("enum")) {
                if (e.equals(v)) {
                    return true;
                }
            }
            return false;
        }
        if (s.has("anyOf")) {
            for (JsonNode alt : s.get("anyOf")) {
                if (validate(alt, v, root)) {
                    return true;
                }
            }
            return false;
        }
        JsonNode type = s.get("type");
        if (type == null) {
            return true;
        }
        switch (type.stringValue()) {
            case "object": {
                if (!v.isObject()) {
                    return false;
                }
                JsonNode props = s.path("properties");
                for (JsonNode req : s.path("required")) {
                    if (!v.has(req.stringValue())) {
                        return false;
                    }
                }
                for (Iterator<String> it = v.propertyNames().iterator(); it.hasNext(); ) {
                    String k = it.next();
                    if (props.has(k)) {
                        if (!validate(props.get(k), v.get(k), root)) {
                            return false;
                        }
                    } else if (s.path("additionalProperties").isBoolean() && !s.get("additionalProperties").booleanValue()) {
                        return false;
                    }
                }
                return true;
            }
            case "array": {
                if (!v.isArray() || v.size() < s.path("minItems").asInt(0)
                        || s.has("maxItems") && v.size() > s.get("maxItems").asInt()) {
                    return false;
                }
                for (JsonNode item : v) {
                    if (s.has("items") && !validate(s.get("items"), item, root)) {
                        return false;
                    }
                }
                return true;
            }
            case "string":
                return v.isString() && (!s.has("maxLength")
                        || v.stringValue().codePointCount(0, v.stringValue().length()) <= s.get("maxLength").asInt());
            case "integer":
                return v.isIntegralNumber();
            case "number":
                return v.isNumber();
            case "boolean":
                return v.isBoolean();
            default:
                return v.isNull();
        }
    }

    private RandomSchemas() {
    }
}
