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

    /**
     * The id a source is imported as unless told otherwise: a model directory's name, with the quantization after a
     * dash ({@code demo-q4}: each format of a model is a model of its own), or a GGUF file's name without {@code .gguf}.
     *
     * @param quantization the quantization's id ({@code q4}), or null
     */
    public static String imported(java.nio.file.Path source, String quantization) {
        String name = source.getFileName() == null ? "" : source.getFileName().toString();
        if (name.toLowerCase(java.util.Locale.ROOT).endsWith(".gguf")) {
            return name.substring(0, name.length() - ".gguf".length());
        }
        return quantization == null ? name : name + "-" + quantization;
    }
}
