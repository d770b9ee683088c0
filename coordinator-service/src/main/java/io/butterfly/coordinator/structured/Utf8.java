package io.butterfly.coordinator.structured;

/**
 * Well-formed UTF-8 (RFC 3629) as a string's matcher reads it byte by byte. A character's state is one int: 0 between
 * characters, else {@code remaining * 8 + range}, the continuation bytes still to come and the range the next one
 * must fall in (a second byte is narrower after E0, ED, F0 and F4: no overlong form, no surrogate, nothing past
 * U+10FFFF).
 */
final class Utf8 {

    private static final int ANY = 0, AFTER_E0 = 1, AFTER_ED = 2, AFTER_F0 = 3, AFTER_F4 = 4;

    private Utf8() {
    }

    /** Whether byte {@code b} begins a character of two to four bytes. */
    static boolean leads(int b) {
        return b >= 0xC2 && b <= 0xF4;
    }

    /** The state after lead byte {@code b}. */
    static int afterLead(int b) {
        if (b <= 0xDF) {
            return 8 + ANY;
        }
        if (b <= 0xEF) {
            return 2 * 8 + (b == 0xE0 ? AFTER_E0 : b == 0xED ? AFTER_ED : ANY);
        }
        return 3 * 8 + (b == 0xF0 ? AFTER_F0 : b == 0xF4 ? AFTER_F4 : ANY);
    }

    /** Whether byte {@code b} is the continuation state {@code utf8} (not 0) expects. */
    static boolean continues(int utf8, int b) {
        return switch (utf8 & 7) {
            case AFTER_E0 -> b >= 0xA0 && b <= 0xBF;
            case AFTER_ED -> b >= 0x80 && b <= 0x9F;
            case AFTER_F0 -> b >= 0x90 && b <= 0xBF;
            case AFTER_F4 -> b >= 0x80 && b <= 0x8F;
            default -> b >= 0x80 && b <= 0xBF;
        };
    }

    /** The state after a continuation byte that {@link #continues} accepted. */
    static int after(int utf8) {
        int remaining = (utf8 >> 3) - 1;
        return remaining == 0 ? 0 : remaining * 8 + ANY;
    }
}
