package io.butterfly.cli.bench;

import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.Log;
import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.common.model.generate.ModelShapes;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * A real model's shape in one weight format, as {@code bench-load --shape --weights} runs it: generated once into a
 * models directory and reused (a 1B model takes half a minute to write, an 8B one a few minutes). Float formats are
 * Hugging Face directories; {@code q4} is a GGUF file written straight in 4 bits (Q4_0, LM head Q6_K), so an 8B
 * model's 32 GB of float32 never exist.
 *
 * @param shape   {@code llama-3.2-1b} or {@code llama-3.1-8b} ({@link ModelShapes})
 * @param weights {@code f32}, {@code bf16} or {@code q4}
 */
record ShapedModel(String shape, String weights) {

    static final List<String> WEIGHTS = List.of("f32", "bf16", "q4");

    ShapedModel {
        if (ModelShapes.named(shape).isEmpty()) {
            throw new IllegalArgumentException("--shape must be one of " + String.join(", ", ModelShapes.names())
                    + ", was '" + shape + "'");
        }
        if (!WEIGHTS.contains(weights)) {
            throw new IllegalArgumentException("--weights must be one of " + String.join(", ", WEIGHTS) + ", was '"
                    + weights + "'");
        }
        // Workers widen F16/BF16 to float32: an 8B held so is 32 GB, more than this kind of machine has.
        if (shape.equals("llama-3.1-8b") && !weights.equals("q4")) {
            throw new IllegalArgumentException("--shape llama-3.1-8b runs with --weights q4 only (in float32 it is 32 GB)");
        }
    }

    /** Where the model lives under {@code modelsDir}: {@code <shape>-<weights>}, a directory or a {@code .gguf} file. */
    Path path(Path modelsDir) {
        String name = shape + "-" + weights;
        return modelsDir.resolve(weights.equals("q4") ? name + ".gguf" : name);
    }

    /** The model under {@code modelsDir}, generated first if it is not there yet. */
    Path ensureGenerated(Path modelsDir, PrintWriter out, PrintWriter err) {
        Path path = path(modelsDir);
        if (Files.isRegularFile(path) || Files.isRegularFile(path.resolve("model.safetensors"))) {
            return path;
        }
        Log.info("generating the " + shape + " model in " + weights + " into " + path + " (once; reused from then on)");
        String[] args = {"--shape", shape, "--dtype", weights, "--out", path.toString()};
        if (GenerateModelCommand.run(args, out, err) != 0) {
            throw new CommandFailedException("could not generate the " + shape + " model in " + path);
        }
        return path;
    }
}
