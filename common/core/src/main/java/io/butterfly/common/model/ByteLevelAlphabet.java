package io.butterfly.common.model;

import java.util.Arrays;

/**
 * GPT-2's byte-level alphabet ({@code bytes_to_unicode}), which a {@code ByteLevel} tokenizer spells every byte with:
 * printable bytes stand for themselves, the others for U+0100 on, in byte order. The model generator writes its
 * vocabularies in it; the coordinator reads a token's bytes back from it.
 */
public final class ByteLevelAlphabet {

    private static final char[] CHAR_OF = new char[256];
    /** By character, its byte; -1 for a character that stands for none (every symbol is below U+0200). */
    private static final int[] BYTE_OF = new int[512];

    static {
        Arrays.fill(BYTE_OF, -1);
        int next = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF;
            char c = printable ? (char) b : (char) (256 + next++);
            CHAR_OF[b] = c;
            BYTE_OF[c] = b;
        }
    }

    private ByteLevelAlphabet() {
    }

    /** The character that spells byte {@code b} (0-255). */
    public static char charOf(int b) {
        return CHAR_OF[b & 0xFF];
    }

    /** The byte {@code c} spells, or -1 if it is none of the 256 symbols. */
    public static int byteOf(char c) {
        return c < BYTE_OF.length ? BYTE_OF[c] : -1;
    }
}
