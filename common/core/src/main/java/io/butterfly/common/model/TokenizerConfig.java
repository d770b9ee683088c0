package io.butterfly.common.model;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import tools.jackson.databind.JsonNode;

/**
 * What a model's {@code tokenizer_config.json} and {@code chat_template.jinja} say about chatting with it, read as
 * transformers reads them: the chat template (the file's when there is one, else the config's {@code chat_template},
 * a string or a list of named templates of which {@code default} is used) and the special tokens a template writes
 * ({@code bos_token}, {@code eos_token}: a string or an added-token object with its {@code content}).
 *
 * @param chatTemplate the Jinja source, or null when the model has none
 * @param bosToken     the beginning-of-sequence token's text, or null
 * @param eosToken     the end-of-sequence token's text, or null
 */
public record TokenizerConfig(String chatTemplate, String bosToken, String eosToken) {

    public static final String FILE = "tokenizer_config.json";
    public static final String CHAT_TEMPLATE_FILE = "chat_template.jinja";

    /** A model without either file. */
    public static final TokenizerConfig NONE = new TokenizerConfig(null, null, null);

    /**
     * Reads the two files in {@code dir}, each when present.
     *
     * @throws IllegalArgumentException naming the file and field when one is not what transformers reads
     */
    public static TokenizerConfig read(Path dir) throws IOException {
        return read(dir.resolve(FILE), dir.resolve(CHAT_TEMPLATE_FILE));
    }

    /** Reads {@code configFile} and {@code templateFile}, each when not null and present. */
    public static TokenizerConfig read(Path configFile, Path templateFile) throws IOException {
        TokenizerConfig config = configFile != null && Files.isRegularFile(configFile)
                ? parse(Files.readAllBytes(configFile)) : NONE;
        if (templateFile != null && Files.isRegularFile(templateFile)) {
            String template = Files.readString(templateFile, StandardCharsets.UTF_8);
            config = new TokenizerConfig(template, config.bosToken(), config.eosToken());
        }
        return config;
    }

    /** The contents of a {@code tokenizer_config.json}. */
    public static TokenizerConfig parse(byte[] json) {
        JsonNode root = JsonObjects.read(json, FILE);
        return new TokenizerConfig(template(root.get("chat_template")), token(root, "bos_token"),
                token(root, "eos_token"));
    }

    private static String template(JsonNode t) {
        if (t == null || t.isNull()) {
            return null;
        }
        if (t.isString()) {
            return t.stringValue();
        }
        if (t.isArray()) { // named templates ("default", "tool_use", "rag"): a chat without tools uses "default"
            for (JsonNode named : t) {
                if (named.isObject() && "default".equals(named.path("name").asString(null))
                        && named.path("template").isString()) {
                    return named.get("template").stringValue();
                }
            }
            return null;
        }
        throw new IllegalArgumentException(FILE + ": chat_template must be a string or a list of named templates, not "
                + t.getNodeType());
    }

    private static String token(JsonNode root, String field) {
        JsonNode t = root.get(field);
        if (t == null || t.isNull()) {
            return null;
        }
        if (t.isString()) {
            return t.stringValue();
        }
        if (t.isObject() && t.path("content").isString()) { // an AddedToken written out
            return t.get("content").stringValue();
        }
        throw new IllegalArgumentException(FILE + ": " + field + " must be a string or an object with a content string");
    }
}
