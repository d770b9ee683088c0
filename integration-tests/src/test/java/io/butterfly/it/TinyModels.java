package io.butterfly.it;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;

/** The tiny generated models the cluster tests serve (written from a seed by the model generator). */
public final class TinyModels {

    /** Four Llama layers: what most cluster tests serve. */
    public static final ModelConfig LLAMA_4 = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 256,
            1e-5, 10000.0, false, 1, 2);
    /** Six Llama layers: enough to split over three stages and a spare. */
    public static final ModelConfig LLAMA_6 = new ModelConfig(Architecture.LLAMA, 6, 64, 4, 2, 160, 512, 256,
            1e-5, 10000.0, false, 1, 2);

    private TinyModels() {
    }
}
