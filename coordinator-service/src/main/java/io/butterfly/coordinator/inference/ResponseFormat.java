package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.structured.Grammar;
import io.butterfly.coordinator.structured.JsonSchemaGrammar;
import io.butterfly.coordinator.structured.SchemaException;
import io.butterfly.common.hash.Sha256;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * What shape the answer must take (OpenAI's {@code response_format}): free text, any JSON object, or a value of a JSON
 * schema. The JSON ones are enforced by constrained decoding ({@link io.butterfly.coordinator.structured}).
 *
 * @param type   {@code text}, {@code json_object} or {@code json_schema}
 * @param name   the schema's name ({@code json_schema.name}), or null
 * @param schema the schema ({@code json_schema.schema}), or null
 * @param strict {@code json_schema.strict}: the schema must meet OpenAI's strict mode rules
 */
public record ResponseFormat(String type, String name, JsonNode schema, boolean strict) {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final Set<String> KEYS = Set.of("type", "json_schema");
    private static final Set<String> SCHEMA_KEYS = Set.of("name", "description", "schema", "strict");

    /** Free text: no constraint. */
    public static final ResponseFormat TEXT = new ResponseFormat("text", null, null, false);

    /** Whether the answer is constrained to JSON. */
    public boolean constrained() {
        return !type.equals("text");
    }

    /**
     * Reads {@code response_format} as OpenAI's API gives it ({@code field} names it in refusals); null or JSON null is
     * text.
     */
    public static ResponseFormat parse(JsonNode f, String field) {
        if (f == null || f.isNull()) {
            return TEXT;
        }
        if (!f.isObject()) {
            throw new InvalidRequestException(field, field + " must be an object with a type");
        }
        for (String key : f.propertyNames()) {
            if (!KEYS.contains(key)) {
                throw new InvalidRequestException(field + "." + key, "unknown field " + key + " in " + field);
            }
        }
        String type = f.path("type").asString(null);
        if (type == null) {
            throw new InvalidRequestException(field + ".type", "type must be text, json_object or json_schema");
        }
        switch (type) {
            case "text":
                return TEXT;
            case "json_object":
                return new ResponseFormat(type, null, null, false);
            case "json_schema":
                break;
            default:
                throw new InvalidRequestException(field + ".type", "type must be text, json_object or json_schema, got "
                        + type);
        }
        JsonNode js = f.get("json_schema");
        String at = field + ".json_schema";
        if (js == null || !js.isObject()) {
            throw new InvalidRequestException(at, "json_schema must be an object with a name and a schema");
        }
        for (String key : js.propertyNames()) {
            if (!SCHEMA_KEYS.contains(key)) {
                throw new InvalidRequestException(at + "." + key, "unknown field " + key + " in json_schema");
            }
        }
        JsonNode name = js.get("name");
        if (name == null || !name.isString() || !name.stringValue().matches("[A-Za-z0-9_-]{1,64}")) {
            throw new InvalidRequestException(at + ".name", "name must be 1-64 letters, digits, _ or -");
        }
        JsonNode strict = js.get("strict");
        if (strict != null && !strict.isNull() && !strict.isBoolean()) {
            throw new InvalidRequestException(at + ".strict", "strict must be true or false");
        }
        JsonNode schema = js.get("schema");
        ResponseFormat format = new ResponseFormat(type, name.stringValue(),
                schema == null || schema.isNull() ? JSON.createObjectNode() : schema,
                strict != null && strict.asBoolean(false));
        format.grammar(field); // refused now, naming where, rather than when the request runs
        return format;
    }

    /** The grammar the answer follows; {@code field} names the response format in a refusal of its schema. */
    public Grammar grammar(String field) {
        if (type.equals("json_object")) {
            return JsonSchemaGrammar.anyObject();
        }
        try {
            return JsonSchemaGrammar.compile(schema, strict);
        } catch (SchemaException e) {
            throw new InvalidRequestException(field + ".json_schema.schema", "the schema " + e.getMessage()
                    .replaceFirst("^#", "at #"));
        }
    }

    /**
     * What the task's record keeps of the format: the SHA-256 of its canonical form (a schema may be large; a resume
     * sends the request again, so the record needs only to tell whether it asks the same), or null for text.
     */
    public String recorded() {
        String c = canonical();
        return c == null ? null : "sha256:" + Sha256.hex(c.getBytes(StandardCharsets.UTF_8));
    }

    /** The format in one canonical string (null for text). */
    public String canonical() {
        if (!constrained()) {
            return null;
        }
        return type.equals("json_object") ? "json_object"
                : "json_schema:" + strict + ":" + JSON.writeValueAsString(schema);
    }
}
