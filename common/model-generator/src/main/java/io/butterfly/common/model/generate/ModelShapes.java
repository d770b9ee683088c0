package io.butterfly.common.model.generate;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The shapes of real models, so that Butterfly can be run at the sizes people serve without downloading weights: the
 * hyper-parameters of the published {@code config.json}, random weights from the generator. Both are Llama 3 shapes
 * (a vocabulary of 128,256, BOS 128000 and EOS 128001 as Meta's configs say, RoPE base 500,000 and Llama 3.1's
 * {@code llama3} frequency scaling, 131,072 positions).
 */
public final class ModelShapes {

    /** Llama-3.2-1B: 16 layers, hidden 2048, 32/8 heads of 64, MLP 8192, tied embeddings; 1.24 B parameters. */
    public static final ModelConfig LLAMA_3_2_1B = llama3(16, 2048, 32, 8, 8192, true, 32.0);
    /** Llama-3.1-8B: 32 layers, hidden 4096, 32/8 heads of 128, MLP 14336, its own LM head; 8.03 B parameters. */
    public static final ModelConfig LLAMA_3_1_8B = llama3(32, 4096, 32, 8, 14336, false, 8.0);

    private static final Map<String, ModelConfig> BY_NAME = byName();

    private ModelShapes() {
    }

    private static Map<String, ModelConfig> byName() {
        Map<String, ModelConfig> m = new LinkedHashMap<>();
        m.put("llama-3.2-1b", LLAMA_3_2_1B);
        m.put("llama-3.1-8b", LLAMA_3_1_8B);
        return m;
    }

    /** The shape of that name ({@link #names()}), if any. */
    public static Optional<ModelConfig> named(String name) {
        return Optional.ofNullable(BY_NAME.get(name));
    }

    /** The shapes' names, as {@code --shape} takes them. */
    public static java.util.Set<String> names() {
        return BY_NAME.keySet();
    }

    private static ModelConfig llama3(int layers, int hidden, int heads, int kvHeads, int intermediate, boolean tied,
                                      double ropeFactor) {
        return new ModelConfig(Architecture.LLAMA, layers, hidden, heads, kvHeads, intermediate, 128_256, 131_072,
                1e-5, 500_000.0, tied, 128_000, 128_001, RopeScaling.llama3(ropeFactor, 1.0, 4.0, 8192));
    }
}
