package io.butterfly.common.manifest;

/** What a stored file holds (mirrors the proto's FileKind; mapped at the edges). */
public enum FileKind {
    CONFIG,
    TOKENIZER,
    EMBEDDING,
    LAYER,
    HEAD,
    /**
     * A kind this version does not know (none given, or a newer registry's): no stage needs such a file. The name is
     * the protocol's, which the canonical form a signature covers spells out.
     */
    FILE_KIND_UNSPECIFIED
}
