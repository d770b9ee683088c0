package io.butterfly.cli.bench;

import io.butterfly.cli.generate.GenerateModelCommand;
import io.butterfly.cli.home.ButterflyHome;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;

/** The small generated model (the demo's) that the fault and soak runs load: their figures are about faults, not speed. */
final class DemoModel {

    private DemoModel() {
    }

    static Path ensure(ButterflyHome home, PrintWriter out, PrintWriter err) {
        Path dir = home.model("demo");
        if (!Files.exists(dir.resolve("model.safetensors"))) {
            out.println("generating the demo model in " + dir);
            GenerateModelCommand.generatePreset("demo", dir, out, err);
        }
        return dir.toAbsolutePath();
    }
}
