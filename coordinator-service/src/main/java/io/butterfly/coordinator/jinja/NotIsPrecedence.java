package io.butterfly.coordinator.jinja;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Jinja reads {@code not x is defined} as {@code not (x is defined)}: a test binds tighter than {@code not}. Jinjava
 * reads it as {@code (not x) is defined}, always true, so Llama 3.1+'s and Mistral's templates set {@code tools} to
 * none when they were given (and Mistral's refuses every call id). Before compiling, {@code not <name> is [not] <test>}
 * in a template's tags (not in its text or string literals) is written {@code <name> is not <test>} (or
 * {@code <name> is <test>}): the same meaning, in a form both read alike.
 */
final class NotIsPrecedence {

    /** A tag's code: {@code {% ... %}} or {@code {{ ... }}}. */
    private static final Pattern TAG = Pattern.compile("\\{%.*?%}|\\{\\{.*?}}", Pattern.DOTALL);
    /**
     * A string literal in a tag (kept as it is), or {@code not} before a name (with attributes and subscripts of
     * literals) and {@code is}.
     */
    private static final Pattern LITERAL_OR_NOT_IS = Pattern.compile("('(?:[^'\\\\]|\\\\.)*'|\"(?:[^\"\\\\]|\\\\.)*\")"
            + "|\\bnot\\s+([A-Za-z_]\\w*(?:\\.[A-Za-z_]\\w*|\\[\\s*(?:\\d+|'[^']*'|\"[^\"]*\")\\s*])*)\\s+is\\s+(not\\s+)?");

    private NotIsPrecedence() {
    }

    static String rewrite(String source) {
        Matcher tags = TAG.matcher(source);
        StringBuilder out = new StringBuilder(source.length());
        while (tags.find()) {
            tags.appendReplacement(out, Matcher.quoteReplacement(code(tags.group())));
        }
        tags.appendTail(out);
        return out.toString();
    }

    /** One tag, its string literals left as they are. */
    private static String code(String tag) {
        Matcher m = LITERAL_OR_NOT_IS.matcher(tag);
        StringBuilder out = new StringBuilder(tag.length());
        while (m.find()) {
            String replacement = m.group(1) != null ? m.group(1)
                    : m.group(2) + (m.group(3) == null ? " is not " : " is ");
            m.appendReplacement(out, Matcher.quoteReplacement(replacement));
        }
        m.appendTail(out);
        return out.toString();
    }
}
