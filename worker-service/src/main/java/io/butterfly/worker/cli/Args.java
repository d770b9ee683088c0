package io.butterfly.worker.cli;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Minimal "--name value" / "--flag" / positional argument parsing for the command-line tools. */
record Args(Map<String, String> options, List<String> positional) {

    static Args parse(String[] args, int from) {
        Map<String, String> options = new HashMap<>();
        List<String> positional = new ArrayList<>();
        for (int i = from; i < args.length; i++) {
            String s = args[i];
            if (s.startsWith("--")) {
                String name = s.substring(2);
                int eq = name.indexOf('=');
                if (eq >= 0) {
                    options.put(name.substring(0, eq), name.substring(eq + 1));
                } else if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                    options.put(name, args[++i]);
                } else {
                    options.put(name, "true");
                }
            } else {
                positional.add(s);
            }
        }
        return new Args(options, positional);
    }

    String option(String name, String fallback) {
        return options.getOrDefault(name, fallback);
    }

    boolean has(String name) {
        return options.containsKey(name);
    }
}
