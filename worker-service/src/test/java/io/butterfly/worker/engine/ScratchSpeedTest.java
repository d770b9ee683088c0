package io.butterfly.worker.engine;

import io.butterfly.common.model.ModelConfig;
import java.nio.file.*;
import java.util.*;
import org.junit.jupiter.api.Test;

class ScratchSpeedTest {
    @Test
    void speed() throws Exception {
        Path base = Path.of("/tmp/scratch/b100");
        ModelConfig c = ModelConfig.read(base.resolve("config.json"));
        for (String q : System.getProperty("formats", "F32,Q8,Q4").split(",")) {
            Path dir = q.equals("F32") ? base : Path.of("/tmp/scratch/b100-" + q);
            for (CpuKernels k : q.equals("F32") ? new CpuKernels[]{CpuKernels.TORCH, CpuKernels.NATIVE} : new CpuKernels[]{CpuKernels.NATIVE}) {
                try (Pipeline p = Pipeline.whole(c, dir, new ExecutorOptions("cpu", Integer.getInteger("threads", 2), 0).withKernels(k))) {
                    long[] prompt = new Random(1).longs(16, 0, c.vocabSize()).toArray();
                    double best = 1e9;
                    for (int round = 0; round < 4; round++) {
                        String id = "s" + round;
                        StageResult r = p.step(List.of(new SequenceChunk(id, 0, 16)), prompt);
                        long tok = Pipeline.argMax(r.toFloats(), 0, c.vocabSize());
                        long t0 = System.nanoTime();
                        int steps = 64;
                        for (int s = 0; s < steps; s++) {
                            r = p.step(List.of(new SequenceChunk(id, 16 + s, 1)), new long[]{tok});
                            tok = Pipeline.argMax(r.toFloats(), 0, c.vocabSize());
                        }
                        double ms = (System.nanoTime() - t0) / 1e6 / steps;
                        best = Math.min(best, ms);
                        p.stages().get(0).release(id);
                    }
                    long[] longPrompt = new Random(2).longs(512, 0, c.vocabSize()).toArray();
                    long t0 = System.nanoTime();
                    p.step(List.of(new SequenceChunk("long", 0, 512)), longPrompt);
                    double prefill = (System.nanoTime() - t0) / 1e6;
                    System.out.printf("SPEED %s %s: best %.2f ms/token, %.1f tok/s; prefill 512: %.0f ms (%s)%n", q, k, best, 1000 / best, prefill, p.stages().get(0).projections());
                }
            }
        }
    }
}
