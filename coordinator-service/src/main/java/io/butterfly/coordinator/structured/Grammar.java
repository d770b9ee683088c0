package io.butterfly.coordinator.structured;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;

/**
 * A compiled JSON grammar: a pushdown matcher over the UTF-8 bytes of the text. A {@link State} is immutable (a set of
 * stacks, one per way the text so far can still be read: {@code anyOf}, optional properties and keys sharing a prefix
 * keep several); {@link State#advance} answers the state after one more byte, or null when the text cannot go on so.
 * Bytes, not characters: a token may end inside a multi-byte character (a byte-level BPE spells 'é' as two byte
 * tokens) and the next one complete it, in a string as in a literal ({@code enum}, {@code const}, a property name);
 * a string's characters must be well-formed UTF-8 (no overlong form, surrogate or stray continuation byte). Equal
 * texts give equal states, which masks are cached by.
 */
public final class Grammar {

    private static final int MAX_INT_DIGITS = 16;
    private static final int MAX_FRACTION_DIGITS = 16;
    private static final int MAX_EXPONENT_DIGITS = 3;
    /** Expansions without a character between them (anyOf of a $ref of ...): a left-recursive schema stops here. */
    private static final int MAX_EXPANSIONS = 64;

    private final Node top;

    Grammar(Node top) {
        this.top = top;
    }

    /** Before the first character. */
    public State start() {
        return new State(Set.of(Stack.EMPTY.push(new Expect(top))));
    }

    /** The state after {@code text} (as UTF-8) from the start, or null if the grammar cannot read it. */
    public State read(String text) {
        return start().advance(text.getBytes(StandardCharsets.UTF_8));
    }

    /** Where the matcher is. */
    public static final class State {
        private final Set<Stack> stacks;
        private final int hash;

        private State(Set<Stack> stacks) {
            this.stacks = stacks;
            this.hash = stacks.hashCode();
        }

        /** The state after byte {@code b} (0-255), or null: no text read so far can go on with it. */
        public State advance(int b) {
            Set<Stack> next = new HashSet<>();
            for (Stack s : stacks) {
                step(s, b & 0xFF, next, 0);
            }
            return next.isEmpty() ? null : new State(next);
        }

        /** The state after {@code bytes}, or null. */
        public State advance(byte[] bytes) {
            State s = this;
            for (int i = 0; i < bytes.length && s != null; i++) {
                s = s.advance(bytes[i]);
            }
            return s;
        }

        /** Whether the text so far is a whole value of the grammar. */
        public boolean accepting() {
            for (Stack s : stacks) {
                if (s == Stack.EMPTY || s.rest == Stack.EMPTY && s.top instanceof InNumber n && n.complete()) {
                    return true;
                }
            }
            return false;
        }

        /** Whether the value is complete and nothing may follow it (a top-level number may still grow). */
        public boolean finished() {
            return stacks.size() == 1 && stacks.contains(Stack.EMPTY);
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof State s && s.hash == hash && s.stacks.equals(stacks);
        }

        @Override
        public int hashCode() {
            return hash;
        }
    }

    /** An immutable stack of frames; the innermost value on top. */
    record Stack(Frame top, Stack rest) {
        static final Stack EMPTY = new Stack(null, null);

        Stack push(Frame f) {
            return new Stack(f, this);
        }
    }

    sealed interface Frame {
    }

    /** A value of {@code node} is next. */
    record Expect(Node node) implements Frame {
    }

    /** Inside a literal, {@code at} of its UTF-8 bytes read. */
    record InLiteral(Node.Literal literal, int at) implements Frame {
    }

    /**
     * Inside a string after its opening quote: {@code length} characters so far (counted only when bounded, a
     * character at its first byte, an escape at its backslash), {@code escape} 0 outside an escape, -1 after a
     * backslash, 1-4 hex digits of a {@code \\u} still to come; {@code utf8} 0 between characters, else the
     * continuation bytes of a multi-byte character still to come ({@link Utf8}).
     */
    record InString(Node.Text node, int length, int escape, int utf8) implements Frame {
    }

    /** Inside a number: where in it ({@code phase}) and digits of that part so far. */
    record InNumber(Node.Number node, int phase, int digits) implements Frame {
        static final int SIGN = 0, ZERO = 1, INT = 2, DOT = 3, FRACTION = 4, E = 5, EXP_SIGN = 6, EXP = 7;

        boolean complete() {
            return phase == ZERO || phase == INT || phase == FRACTION || phase == EXP;
        }
    }

    /** Inside an object of declared fields: the next field that may come is {@code next}. */
    record InFields(Node.Fields node, int next, int phase) implements Frame {
        static final int KEY_OR_END = 0, KEY = 1, AFTER_VALUE = 2;
    }

    /** Inside an object of any keys. */
    record InDict(Node.Dict node, int phase) implements Frame {
        static final int KEY_OR_END = 0, KEY = 1, COLON = 2, AFTER_VALUE = 3;
    }

    /** Inside an array, {@code count} items begun. */
    record InItems(Node.Items node, int count, int phase) implements Frame {
        static final int ITEM_OR_END = 0, ITEM = 1, AFTER_ITEM = 2;
    }

    private static final Node.Text KEY = new Node.Text(-1);

    /** Adds to {@code out} every stack {@code s} becomes by reading byte {@code c} (0-255). */
    private static void step(Stack s, int c, Set<Stack> out, int expansions) {
        if (s == Stack.EMPTY || expansions > MAX_EXPANSIONS) {
            return;
        }
        Stack rest = s.rest;
        Frame top = s.top;
        if (top instanceof Expect e) {
            expect(e.node, rest, c, out, expansions);
        } else if (top instanceof InLiteral l) {
            if ((l.literal.bytes[l.at] & 0xFF) == c) {
                out.add(l.at + 1 == l.literal.bytes.length ? rest : rest.push(new InLiteral(l.literal, l.at + 1)));
            }
        } else if (top instanceof InString t) {
            string(t, rest, c, out);
        } else if (top instanceof InNumber n) {
            number(n, rest, c, out, expansions);
        } else if (top instanceof InFields f) {
            fields(f, rest, c, out, expansions);
        } else if (top instanceof InDict d) {
            dict(d, rest, c, out, expansions);
        } else if (top instanceof InItems a) {
            items(a, rest, c, out, expansions);
        }
    }

    private static void expect(Node node, Stack rest, int c, Set<Stack> out, int expansions) {
        if (node instanceof Node.OneOf o) {
            for (Node option : o.options) {
                step(rest.push(new Expect(option)), c, out, expansions + 1);
            }
        } else if (node instanceof Node.Ref r) {
            step(rest.push(new Expect(r.target())), c, out, expansions + 1);
        } else if (node instanceof Node.Literal l) {
            step(rest.push(new InLiteral(l, 0)), c, out, expansions);
        } else if (node instanceof Node.Text t) {
            if (c == '"') {
                out.add(rest.push(new InString(t, 0, 0, 0)));
            }
        } else if (node instanceof Node.Number n) {
            if (c == '-') {
                out.add(rest.push(new InNumber(n, InNumber.SIGN, 0)));
            } else if (c == '0') {
                out.add(rest.push(new InNumber(n, InNumber.ZERO, 1)));
            } else if (c >= '1' && c <= '9') {
                out.add(rest.push(new InNumber(n, InNumber.INT, 1)));
            }
        } else if (node instanceof Node.Fields f) {
            if (c == '{') {
                out.add(rest.push(new InFields(f, 0, InFields.KEY_OR_END)));
            }
        } else if (node instanceof Node.Dict d) {
            if (c == '{') {
                out.add(rest.push(new InDict(d, InDict.KEY_OR_END)));
            }
        } else if (node instanceof Node.Items a) {
            if (c == '[') {
                out.add(rest.push(new InItems(a, 0, InItems.ITEM_OR_END)));
            }
        }
    }

    private static void string(InString t, Stack rest, int c, Set<Stack> out) {
        if (t.utf8 != 0) {
            if (Utf8.continues(t.utf8, c)) {
                out.add(rest.push(new InString(t.node, t.length, 0, Utf8.after(t.utf8))));
            }
            return;
        }
        boolean counted = t.node.maxLength >= 0;
        boolean room = !counted || t.length < t.node.maxLength;
        int grown = counted ? t.length + 1 : 0;
        if (t.escape == 0) {
            if (c == '"') {
                out.add(rest);
            } else if (c == '\\') {
                if (room) {
                    out.add(rest.push(new InString(t.node, grown, -1, 0)));
                }
            } else if (c >= 0x20 && c < 0x80 && room) {
                out.add(rest.push(new InString(t.node, grown, 0, 0)));
            } else if (Utf8.leads(c) && room) {
                out.add(rest.push(new InString(t.node, grown, 0, Utf8.afterLead(c))));
            }
        } else if (t.escape == -1) {
            if ("\"\\/bfnrt".indexOf(c) >= 0) {
                out.add(rest.push(new InString(t.node, t.length, 0, 0)));
            } else if (c == 'u') {
                out.add(rest.push(new InString(t.node, t.length, 4, 0)));
            }
        } else if (c < 0x80 && Character.digit(c, 16) >= 0) {
            out.add(rest.push(new InString(t.node, t.length, t.escape - 1, 0)));
        }
    }

    private static void number(InNumber n, Stack rest, int c, Set<Stack> out, int expansions) {
        boolean digit = c >= '0' && c <= '9';
        boolean integer = n.node.integer;
        InNumber next = switch (n.phase) {
            case InNumber.SIGN -> c == '0' ? new InNumber(n.node, InNumber.ZERO, 1)
                    : digit ? new InNumber(n.node, InNumber.INT, 1) : null;
            case InNumber.ZERO, InNumber.INT -> digit && n.phase == InNumber.INT && n.digits < MAX_INT_DIGITS
                    ? new InNumber(n.node, InNumber.INT, n.digits + 1)
                    : !integer && c == '.' ? new InNumber(n.node, InNumber.DOT, 0)
                    : !integer && (c == 'e' || c == 'E') ? new InNumber(n.node, InNumber.E, 0) : null;
            case InNumber.DOT -> digit ? new InNumber(n.node, InNumber.FRACTION, 1) : null;
            case InNumber.FRACTION -> digit && n.digits < MAX_FRACTION_DIGITS
                    ? new InNumber(n.node, InNumber.FRACTION, n.digits + 1)
                    : c == 'e' || c == 'E' ? new InNumber(n.node, InNumber.E, 0) : null;
            case InNumber.E -> c == '+' || c == '-' ? new InNumber(n.node, InNumber.EXP_SIGN, 0)
                    : digit ? new InNumber(n.node, InNumber.EXP, 1) : null;
            case InNumber.EXP_SIGN -> digit ? new InNumber(n.node, InNumber.EXP, 1) : null;
            default -> digit && n.digits < MAX_EXPONENT_DIGITS ? new InNumber(n.node, InNumber.EXP, n.digits + 1) : null;
        };
        if (next != null) {
            out.add(rest.push(next));
        }
        if (n.complete()) {
            step(rest, c, out, expansions); // the number ended before c: c belongs to what follows it
        }
    }

    private static void fields(InFields f, Stack rest, int c, Set<Stack> out, int expansions) {
        Node.Fields node = f.node;
        if (f.phase == InFields.AFTER_VALUE) {
            if (c == ',' && f.next < node.fields.size()) {
                out.add(rest.push(new InFields(node, f.next, InFields.KEY)));
            }
            if (c == '}' && node.restOptional(f.next)) {
                out.add(rest);
            }
            return;
        }
        if (c == '}' && f.phase == InFields.KEY_OR_END && node.restOptional(f.next)) {
            out.add(rest);
        }
        for (int j = f.next; j < node.fields.size(); j++) {
            Node.Field field = node.fields.get(j);
            Stack key = rest.push(new InFields(node, j + 1, InFields.AFTER_VALUE)).push(new Expect(field.value()))
                    .push(new Expect(field.key()));
            step(key, c, out, expansions);
            if (field.required()) {
                break; // no later field may come before it
            }
        }
    }

    private static void dict(InDict d, Stack rest, int c, Set<Stack> out, int expansions) {
        switch (d.phase) {
            case InDict.KEY_OR_END, InDict.KEY -> {
                if (c == '}' && d.phase == InDict.KEY_OR_END) {
                    out.add(rest);
                }
                step(rest.push(new InDict(d.node, InDict.COLON)).push(new Expect(KEY)), c, out, expansions);
            }
            case InDict.COLON -> {
                if (c == ':') {
                    out.add(rest.push(new InDict(d.node, InDict.AFTER_VALUE)).push(new Expect(d.node.values)));
                }
            }
            default -> {
                if (c == ',') {
                    out.add(rest.push(new InDict(d.node, InDict.KEY)));
                } else if (c == '}') {
                    out.add(rest);
                }
            }
        }
    }

    private static void items(InItems a, Stack rest, int c, Set<Stack> out, int expansions) {
        Node.Items node = a.node;
        boolean mayEnd = a.count >= node.minItems;
        boolean mayAdd = node.maxItems < 0 || a.count < node.maxItems;
        if (a.phase == InItems.AFTER_ITEM) {
            if (c == ',' && mayAdd) {
                out.add(rest.push(new InItems(node, a.count, InItems.ITEM)));
            } else if (c == ']' && mayEnd) {
                out.add(rest);
            }
            return;
        }
        if (c == ']' && a.phase == InItems.ITEM_OR_END && mayEnd) {
            out.add(rest);
        }
        if (mayAdd) {
            step(rest.push(new InItems(node, a.count + 1, InItems.AFTER_ITEM)).push(new Expect(node.items)), c, out,
                    expansions);
        }
    }
}
