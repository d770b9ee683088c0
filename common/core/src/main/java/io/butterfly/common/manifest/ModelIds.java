package io.butterfly.common.manifest;

import java.util.regex.Pattern;

/**
 * What a model id may be: it names a directory on the registry and on every node that downloads the model, so
 * it is one path segment of safe characters (never {@code ..}, a slash or an absolute path).
 */
public final class ModelIds {

    private static final Pattern MODEL_ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

    private ModelIds() {
    }

    public static boolean isValid(String modelId) {
        return modelId != null && MODEL_ID.matcher(modelId).matches();
    }
}
