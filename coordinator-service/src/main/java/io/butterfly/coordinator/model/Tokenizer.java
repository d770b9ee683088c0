package io.butterfly.coordinator.model;

import java.io.IOException;
import java.nio.file.Path;

/** The served model's tokenizer: text to token ids and back, exactly as its tokenizer.json says. */
public interface Tokenizer extends AutoCloseable {

    /** The token ids of {@code text}, with the special tokens the tokenizer file says to add. */
    default long[] encode(String text) {
        return encode(text, true);
    }

    /**
     * The token ids of {@code text}; without adding special tokens when {@code addSpecialTokens} is false (a rendered
     * chat template writes its own, as transformers' {@code apply_chat_template} tokenizes). Special tokens written in
     * the text are read as such either way.
     */
    long[] encode(String text, boolean addSpecialTokens);

    /** The text of {@code ids}, special tokens left out. */
    String decode(long[] ids);

    /**
     * The bytes token {@code id} writes into a decoded text before the text is read as UTF-8, where the tokenizer's
     * decoder spells them (byte-level BPE, SentencePiece's byte fallback), else null: what a token that ends inside a
     * character really adds (its {@link #decode} is U+FFFD).
     */
    default byte[] tokenBytes(long id) {
        return null;
    }

    @Override
    void close();

    /** Opens tokenizer files (tokenizer/ holds the implementation). */
    interface Loader {

        /** Loads what every tokenizer needs (a native library) ahead of the first one, which then opens faster. */
        void preload();

        Tokenizer open(Path tokenizerJson) throws IOException;
    }
}
