package io.butterfly.it;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The whole model in this one process: the baseline a distributed run must equal bit for bit. */
public final class SingleProcessReference {

    public record Generation(List<Long> tokens, List<Double> logprobs, List<List<Double>> topLogprobs) {
    }

    public static Generation generate(Path modelDir, long[] prompt, int maxTokens, SamplingParams params) throws Exception {
        return generate(modelDir, prompt, maxTokens, params, new ExecutorOptions("cpu", 0));
    }

    /** @param options how the stage computes (its kernels: a quantized model's reference is libtorch's float32) */
    public static Generation generate(Path modelDir, long[] prompt, int maxTokens, SamplingParams params,
                                      ExecutorOptions options) throws Exception {
        return generateEach(modelDir, List.of(prompt), maxTokens, params, options).get(0);
    }

    /**
     * Each prompt's generation, one after another, from one load of the model (each a sequence of its own, freed when
     * the executor closes, as {@link #generate}'s one is): the tokens of {@link #generate} per prompt, without loading
     * the model per prompt.
     */
    public static List<Generation> generateEach(Path modelDir, List<long[]> prompts, int maxTokens,
                                                SamplingParams params) throws Exception {
        return generateEach(modelDir, prompts, maxTokens, params, new ExecutorOptions("cpu", 0));
    }

    private static List<Generation> generateEach(Path modelDir, List<long[]> prompts, int maxTokens,
                                                 SamplingParams params, ExecutorOptions options) throws Exception {
        ModelConfig config = ModelConfig.read(modelDir.resolve("config.json"));
        PartitionSpec spec = new PartitionSpec(config, 0, config.numLayers(), true, true);
        List<Generation> out = new ArrayList<>();
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(spec, List.of(modelDir.resolve("model.safetensors")),
                options)) {
            for (int p = 0; p < prompts.size(); p++) {
                String sequence = "ref-" + p;
                out.add(generate(exec, config, sequence, prompts.get(p), maxTokens, new Sampler(params)));
            }
        }
        return out;
    }

    private static Generation generate(DjlPartitionExecutor exec, ModelConfig config, String sequence, long[] prompt,
                                       int maxTokens, Sampler sampler) {
        List<Long> tokens = new ArrayList<>();
        List<Double> logprobs = new ArrayList<>();
        List<List<Double>> top = new ArrayList<>();
        long[] input = prompt;
        int position = 0;
        for (int step = 0; step < maxTokens; step++) {
            StageResult r = exec.forward(List.of(new SequenceChunk(sequence, position, input.length)),
                    new StageInput.Tokens(input));
            float[] logits = new float[config.vocabSize()];
            r.littleEndianFloats().duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(logits);
            TokenChoice c = sampler.choose(logits, step);
            tokens.add((long) c.tokenId());
            logprobs.add(c.logprob());
            top.add(c.topLogprobs().stream().map(t -> t.logprob()).toList());
            position += input.length;
            input = new long[]{c.tokenId()};
            if (config.endsSequence(c.tokenId())) {
                break;
            }
        }
        return new Generation(tokens, logprobs, top);
    }

    private SingleProcessReference() {
    }
}
