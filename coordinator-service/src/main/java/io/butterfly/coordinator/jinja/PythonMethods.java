package io.butterfly.coordinator.jinja;

import java.beans.FeatureDescriptor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;
import jinjava.javax.el.MethodNotFoundException;
import jinjava.javax.el.PropertyNotFoundException;

/**
 * The only methods a chat template may call, with Python's meaning: the string methods chat templates use
 * ({@code strip}, {@code startswith}, {@code split}, ...) and reading a dict ({@code items}, {@code keys},
 * {@code values}, {@code get}). Jinjava would otherwise call any public Java method of a value ({@code 'a'.repeat(n)}
 * allocates what it is told), and a Python method Java's String lacks would fail. Lists and dicts stay read-only, as
 * in transformers' {@code ImmutableSandboxedEnvironment}; Jinjava's own objects ({@code loop}, namespaces) keep
 * theirs.
 */
final class PythonMethods extends ELResolver {

    private static final Set<String> DICT_METHODS = Set.of("items", "keys", "values", "get");

    @Override
    public Object invoke(ELContext context, Object base, Object method, Class<?>[] types, Object[] params) {
        if (base == null || method == null) {
            return null; // a function call: Jinjava's own resolvers find it
        }
        String name = method.toString();
        Object[] args = params == null ? new Object[0] : params;
        if (base instanceof String s) {
            Object result = stringMethod(s, name, args);
            context.setPropertyResolved(true);
            return result;
        }
        if (base instanceof Map<?, ?> && DICT_METHODS.contains(name)) {
            return null; // the dict's own (Jinjava's PyMap has them)
        }
        if (base instanceof Map<?, ?> || base instanceof List<?> || base instanceof Number || base instanceof Boolean) {
            throw new MethodNotFoundException(notAllowed(base, name));
        }
        return null;
    }

    /** No property of a string, number or boolean either: a property is a getter ({@code 'a'.bytes}). */
    @Override
    public Object getValue(ELContext context, Object base, Object property) {
        if (base instanceof String || base instanceof Number || base instanceof Boolean) {
            throw new PropertyNotFoundException("a chat template reads no property of a " + typeName(base) + ": "
                    + property);
        }
        return null;
    }

    private static Object stringMethod(String s, String name, Object[] args) {
        return switch (name) {
            case "strip" -> strip(s, chars(args), true, true);
            case "lstrip" -> strip(s, chars(args), true, false);
            case "rstrip" -> strip(s, chars(args), false, true);
            case "startswith" -> s.startsWith(arg(args, 0, name));
            case "endswith" -> s.endsWith(arg(args, 0, name));
            case "lower" -> s.toLowerCase(Locale.ROOT);
            case "upper" -> s.toUpperCase(Locale.ROOT);
            case "title" -> title(s);
            case "capitalize" -> s.isEmpty() ? s
                    : s.substring(0, 1).toUpperCase(Locale.ROOT) + s.substring(1).toLowerCase(Locale.ROOT);
            case "replace" -> s.replace(arg(args, 0, name), arg(args, 1, name));
            case "split" -> split(s, args.length == 0 || args[0] == null ? null : arg(args, 0, name));
            case "join" -> join(s, args.length == 0 ? null : args[0]);
            default -> throw new MethodNotFoundException(notAllowed(s, name));
        };
    }

    private static String notAllowed(Object base, String name) {
        return "a chat template may not call " + name + "() on a " + typeName(base);
    }

    private static String typeName(Object base) {
        return base instanceof String ? "string" : base instanceof Map<?, ?> ? "dict"
                : base instanceof List<?> ? "list" : base instanceof Boolean ? "boolean" : "number";
    }

    private static String arg(Object[] args, int i, String method) {
        if (args.length <= i || !(args[i] instanceof String a)) {
            throw new MethodNotFoundException(method + "() takes a string as argument " + (i + 1));
        }
        return a;
    }

    private static String chars(Object[] args) {
        return args.length == 0 || args[0] == null ? null : arg(args, 0, "strip");
    }

    /** Python's str.strip: whitespace, or any of {@code chars}. */
    private static String strip(String s, String chars, boolean left, boolean right) {
        int start = 0;
        int end = s.length();
        while (left && start < end && strips(s.charAt(start), chars)) {
            start++;
        }
        while (right && end > start && strips(s.charAt(end - 1), chars)) {
            end--;
        }
        return s.substring(start, end);
    }

    private static boolean strips(char c, String chars) {
        return chars == null ? Character.isWhitespace(c) || Character.isSpaceChar(c) : chars.indexOf(c) >= 0;
    }

    /** Python's str.split: on whitespace runs (no empty parts) without a separator, else on each separator. */
    private static List<String> split(String s, String separator) {
        List<String> parts = new ArrayList<>();
        if (separator == null) {
            for (String p : s.strip().split("\\s+")) {
                if (!p.isEmpty()) {
                    parts.add(p);
                }
            }
            return parts;
        }
        if (separator.isEmpty()) {
            throw new MethodNotFoundException("split() takes a non-empty separator");
        }
        int from = 0;
        for (int at = s.indexOf(separator); at >= 0; at = s.indexOf(separator, from)) {
            parts.add(s.substring(from, at));
            from = at + separator.length();
        }
        parts.add(s.substring(from));
        return parts;
    }

    private static String join(String separator, Object items) {
        if (!(items instanceof Iterable<?> iterable)) {
            throw new MethodNotFoundException("join() takes a list of strings");
        }
        StringBuilder b = new StringBuilder();
        for (Object item : iterable) {
            if (!(item instanceof String text)) {
                throw new MethodNotFoundException("join() takes a list of strings");
            }
            if (!b.isEmpty()) {
                b.append(separator);
            }
            b.append(text);
        }
        return b.toString();
    }

    private static String title(String s) {
        StringBuilder b = new StringBuilder(s.length());
        boolean wordStart = true;
        for (char c : s.toCharArray()) {
            b.append(wordStart ? Character.toUpperCase(c) : Character.toLowerCase(c));
            wordStart = !Character.isLetter(c);
        }
        return b.toString();
    }

    @Override
    public Class<?> getType(ELContext context, Object base, Object property) {
        return null;
    }

    @Override
    public void setValue(ELContext context, Object base, Object property, Object value) {
        // not this resolver's: the next one decides
    }

    @Override
    public boolean isReadOnly(ELContext context, Object base, Object property) {
        return false;
    }

    @Override
    public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
        return null;
    }

    @Override
    public Class<?> getCommonPropertyType(ELContext context, Object base) {
        return null;
    }
}
