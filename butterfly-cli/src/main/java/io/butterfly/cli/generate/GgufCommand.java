package io.butterfly.cli.generate;

import io.butterfly.cli.command.CommandFailedException;
import io.butterfly.cli.command.ShowsUsageOnError;
import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.quant.WeightQuantization;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code model gguf}: writes a Llama-family Hugging Face directory as a GGUF file, as llama.cpp's converter and
 * {@code llama-quantize} would (see {@link GgufExport}): to serve as a GGUF file, or to run llama.cpp on the same
 * weights.
 */
@Command(name = "gguf", description = "write a Llama-family model directory as a GGUF file (llama.cpp's layout),"
        + " its matrices in float32 or quantized")
public final class GgufCommand implements Callable<Integer>, ShowsUsageOnError {

    @Option(names = "--model", required = true, paramLabel = "DIR", description = "the Hugging Face model directory")
    Path model;

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "the GGUF file to write")
    Path out;

    @Option(names = "--type", paramLabel = "f32|q8|q4|q4_k", defaultValue = "f32",
            description = "the matrices' types: f32, q8 (Q8_0), q4 (Q4_0, head Q6_K) or q4_k (Q4_K_M); default f32")
    String type;

    @Override
    public Integer call() throws IOException {
        WeightQuantization q = null;
        if (!type.equalsIgnoreCase("f32")) {
            q = WeightQuantization.byId(type).orElseThrow(() -> new CommandFailedException(
                    "--type " + type + " is not one of f32, q8, q4, q4_k"));
        }
        if (!Files.isRegularFile(model.resolve("config.json"))) {
            throw new CommandFailedException("--model " + model + " has no config.json");
        }
        long started = System.nanoTime();
        GgufExport.write(model, out, q);
        System.out.printf("wrote %s (%d MB) in %.1f s%n", out, Files.size(out) >> 20, (System.nanoTime() - started) / 1e9);
        return 0;
    }
}
