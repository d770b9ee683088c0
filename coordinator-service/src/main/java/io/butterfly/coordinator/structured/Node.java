package io.butterfly.coordinator.structured;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One JSON value's grammar, compiled from a JSON schema by {@link JsonSchemaGrammar}. Nodes compare by identity (the
 * matcher's states hold them, and hash them on every step; a recursive schema makes a cyclic graph).
 */
abstract sealed class Node {

    /**
     * Exactly this JSON text: a {@code const} or {@code enum} value, {@code true}, {@code false}, {@code null}, a
     * property's key; matched over its UTF-8 {@code bytes}.
     */
    static final class Literal extends Node {
        final String text;
        final byte[] bytes;

        Literal(String text) {
            this.text = text;
            this.bytes = text.getBytes(StandardCharsets.UTF_8);
        }
    }

    /** A string of at most {@code maxLength} characters (-1: any length). */
    static final class Text extends Node {
        final int maxLength;

        Text(int maxLength) {
            this.maxLength = maxLength;
        }
    }

    /** A number; {@code integer}: without fraction or exponent. */
    static final class Number extends Node {
        final boolean integer;

        Number(boolean integer) {
            this.integer = integer;
        }
    }

    /**
     * An object of declared properties, written in their declared order, each optional one possibly left out, and no
     * other (what a strict schema's {@code additionalProperties: false} asks; a schema that allows others still gets
     * only the declared ones, which it accepts).
     */
    static final class Fields extends Node {
        final List<Field> fields;

        Fields(List<Field> fields) {
            this.fields = fields;
        }

        /** Whether every field from {@code index} on may be left out. */
        boolean restOptional(int index) {
            for (int i = index; i < fields.size(); i++) {
                if (fields.get(i).required) {
                    return false;
                }
            }
            return true;
        }
    }

    /** A declared property: its key as written ({@code "name":}), its value, whether it must be present. */
    record Field(String name, Literal key, Node value, boolean required) {
    }

    /** An object of any keys, each with a value of {@code values} (an object without declared properties). */
    static final class Dict extends Node {
        final Node values;

        Dict(Node values) {
            this.values = values;
        }
    }

    /** An array of {@code minItems} to {@code maxItems} (-1: any number) items of {@code items}. */
    static final class Items extends Node {
        final Node items;
        final int minItems;
        final int maxItems;

        Items(Node items, int minItems, int maxItems) {
            this.items = items;
            this.minItems = minItems;
            this.maxItems = maxItems;
        }
    }

    /** Any one of {@code options} (filled after construction, so that a value may contain itself). */
    static final class OneOf extends Node {
        final List<Node> options = new ArrayList<>();
    }

    /** A {@code $ref} to a definition, resolved when the matcher reaches it (definitions may refer to each other). */
    static final class Ref extends Node {
        final String name;
        final Map<String, Node> definitions;

        Ref(String name, Map<String, Node> definitions) {
            this.name = name;
            this.definitions = definitions;
        }

        Node target() {
            return definitions.get(name);
        }
    }

    /** Any JSON value (json_object's values): objects, arrays, strings, numbers, booleans, null. */
    static OneOf anyValue() {
        OneOf any = new OneOf();
        any.options.add(new Dict(any));
        any.options.add(new Items(any, 0, -1));
        any.options.add(new Text(-1));
        any.options.add(new Number(false));
        any.options.add(new Literal("true"));
        any.options.add(new Literal("false"));
        any.options.add(new Literal("null"));
        return any;
    }
}
