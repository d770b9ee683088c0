package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.structured.Vocabulary;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.BitSet;

/**
 * The served model's tokens as the constrained decoder reads them: the UTF-8 bytes each adds inside a generation. A
 * token is decoded after a neutral context token (alone, a SentencePiece word would lose its leading space); special
 * tokens decode to nothing and are never allowed, save the end-of-sequence ones once the value is complete. A token
 * that ends inside a UTF-8 character decodes to U+FFFD: its bytes are then those the tokenizer's decoder spells
 * ({@link Tokenizer#tokenBytes}: a byte-level BPE's byte tokens, SentencePiece's {@code <0xE9>}), so that the matcher
 * reads a character two tokens spell as the character (in a literal too); where the decoder does not spell them, the
 * token stays U+FFFD, allowed only inside a string. Built once per served model (one decode per token).
 */
final class ModelVocabulary {

    private ServedModel model;
    private Vocabulary vocabulary;

    /** The vocabulary of {@code served}, built on first use. */
    synchronized Vocabulary of(ServedModel served) {
        if (model != served) {
            vocabulary = build(served);
            model = served;
        }
        return vocabulary;
    }

    static Vocabulary build(ServedModel served) {
        Tokenizer t = served.tokenizer();
        int size = served.config().vocabSize();
        long[] context = t.encode("a", false);
        String before = t.decode(context);
        long[] ids = Arrays.copyOf(context, context.length + 1);
        byte[][] bytes = new byte[size][];
        BitSet end = new BitSet(size);
        for (int id = 0; id < size; id++) {
            if (served.config().endsSequence(id)) {
                end.set(id);
                continue;
            }
            ids[context.length] = id;
            String with = t.decode(ids);
            String text = with.startsWith(before) ? with.substring(before.length()) : t.decode(new long[]{id});
            byte[] spelled = text.indexOf('\uFFFD') >= 0 ? t.tokenBytes(id) : null;
            bytes[id] = spelled != null ? spelled : text.getBytes(StandardCharsets.UTF_8);
        }
        return new Vocabulary(bytes, end);
    }
}
