package io.butterfly.coordinator.jinja;

import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.lib.exptest.ExpTest;
import java.util.Map;

/**
 * Jinja's {@code iterable} test as Python answers it: a string is iterable (Llama 3.1+'s template asks it of a tool's
 * answer, and prints a string answer as its JSON string because of it), as are lists and dicts; Jinjava's own says a
 * string is not.
 */
final class PythonIterableTest implements ExpTest {

    @Override
    public String getName() {
        return "iterable";
    }

    @Override
    public boolean evaluate(Object var, JinjavaInterpreter interpreter, Object... args) {
        return var instanceof CharSequence || var instanceof Iterable<?> || var instanceof Map<?, ?>
                || var != null && var.getClass().isArray();
    }
}
