package io.butterfly.cli.bench;

import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The weight bytes one decode token of one sequence reads in a mixture of experts, from the model's own tensors: every
 * tensor once, except that of each sparse layer's routed experts only the {@code k} the router chose count (every
 * expert of a layer has the same size, so that is {@code k / experts} of the layer's expert bytes, whichever it chose),
 * and of the token embedding one row (unless the LM head is tied to it, which then reads all of it).
 *
 * @param dense   bytes every token reads: attention, norms, routers, shared experts, the LM head, an embedding row
 * @param chosen  bytes of the routed experts a token runs: {@code k} per sparse layer
 * @param experts bytes of all routed experts (what the workers hold)
 */
record ExpertTokenBytes(long dense, long chosen, long experts) {

    private static final Pattern EXPERT = Pattern.compile("^model\\.layers\\.(\\d+)\\..*\\.experts\\.(\\d+)\\.");

    /** Bytes a token reads: the dense part and its chosen experts. */
    long perToken() {
        return dense + chosen;
    }

    /**
     * Of a token's bytes, those the worker holding {@code groupExperts} of each layer's experts reads on average when
     * the router chooses uniformly (group 0 also reads the dense part).
     */
    double groupShare(int groupExperts, int allExperts, boolean holdsDense) {
        return (holdsDense ? dense : 0) + (double) chosen * groupExperts / allExperts;
    }

    /** Counts {@code dir/model.safetensors} as one decode token of {@code config} reads it. */
    static ExpertTokenBytes of(Path dir, ModelConfig config) throws IOException {
        MixtureOfExperts moe = config.experts();
        if (moe == null) {
            throw new IllegalArgumentException("not a mixture of experts: " + dir);
        }
        long dense = 0;
        long experts = 0;
        try (SafetensorsFile file = SafetensorsFile.open(dir.resolve("model.safetensors"))) {
            for (TensorInfo t : file.tensors().values()) {
                long bytes = t.end() - t.begin();
                Matcher m = EXPERT.matcher(t.name());
                if (m.find()) {
                    experts += bytes;
                } else if (t.name().equals("model.embed_tokens.weight") && !config.tieWordEmbeddings()) {
                    dense += bytes / config.vocabSize();
                } else {
                    dense += bytes;
                }
            }
        }
        // k of the experts' bytes: the same k in every sparse layer, the experts of a layer all of one size
        long chosen = Math.round((double) experts * moe.perToken() / moe.experts());
        return new ExpertTokenBytes(dense, chosen, experts);
    }
}
