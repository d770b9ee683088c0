package io.butterfly.common.manifest;

/** What a stored file holds (mirrors the proto's FileKind; mapped at the edges). */
public enum FileKind {
    CONFIG,
    TOKENIZER,
    EMBEDDING,
    LAYER,
    HEAD
}
