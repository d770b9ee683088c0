package io.butterfly.common.manifest;

/** What a stored file holds (mirrors the proto's FileKind; mapped at the edges). */
public enum FileKind {
    CONFIG,
    TOKENIZER,
    EMBEDDING,
    LAYER,
    HEAD,
    /** {@code tokenizer_config.json}: the tokenizer's special tokens and, usually, the chat template. */
    TOKENIZER_CONFIG,
    /** {@code chat_template.jinja}: a chat template kept in a file of its own (it then wins over the config's). */
    CHAT_TEMPLATE,
    /**
     * A kind this version does not know (none given, or a newer registry's): no stage needs such a file. The name is
     * the protocol's, which the canonical form a signature covers spells out.
     */
    FILE_KIND_UNSPECIFIED
}
