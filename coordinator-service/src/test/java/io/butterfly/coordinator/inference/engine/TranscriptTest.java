package io.butterfly.coordinator.inference.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A transcript's digest is a function of the prompt and the (end, logits hash, token) of each sampled token alone: the
 * steps that led there (how the prompt was cut, what else was batched, which stages) do not change it, and any one
 * changed bit of what it covers does.
 */
class TranscriptTest {

    @Test
    void theDigestCoversThePromptAndEachSampledRowAndTokenButNotTheSteps() {
        Random random = new Random(13);
        for (int trial = 0; trial < 50; trial++) {
            long[] prompt = random.longs(1 + random.nextInt(20), 0, 50_000).toArray();
            int tokens = 1 + random.nextInt(30);
            long[] rows = random.longs(tokens).toArray();
            long[] ids = random.longs(tokens, 0, 50_000).toArray();

            Transcript a = new Transcript(prompt);
            Transcript b = new Transcript(prompt);
            long expected = a.snapshot().genesis();
            for (int i = 0; i < tokens; i++) {
                int end = prompt.length + i;
                // b's steps are cut and placed differently: the digest does not see them
                a.stepped(new Transcript.Step(i, i == 0 ? 0 : end - 1, i == 0 ? prompt.length : 1, random.nextLong(),
                        List.of(new Transcript.StageOutput("w0", "F32/FLOAT32/INT8", random.nextLong()))));
                b.stepped(new Transcript.Step(100 + i, 0, 1, random.nextLong(), List.of()));
                a.sampled(end, rows[i], ids[i]);
                b.sampled(end, rows[i], ids[i]);
                expected = Transcript.link(expected, end, rows[i], ids[i]);
            }
            assertThat(a.snapshot().digest()).isEqualTo(b.snapshot().digest()).isEqualTo(expected);
            assertThat(a.snapshot().links()).hasSize(tokens);
            assertThat(a.snapshot().links().get(tokens - 1).link()).isEqualTo(expected);

            // one bit of a row's hash, a token or the prompt changed: another digest
            int at = random.nextInt(tokens);
            Transcript c = new Transcript(prompt);
            Transcript d = new Transcript(prompt);
            long[] otherPrompt = prompt.clone();
            otherPrompt[random.nextInt(prompt.length)] ^= 1;
            Transcript e = new Transcript(otherPrompt);
            for (int i = 0; i < tokens; i++) {
                int end = prompt.length + i;
                c.sampled(end, i == at ? rows[i] ^ (1L << random.nextInt(64)) : rows[i], ids[i]);
                d.sampled(end, rows[i], i == at ? ids[i] + 1 : ids[i]);
                e.sampled(end, rows[i], ids[i]);
            }
            assertThat(c.snapshot().digest()).isNotEqualTo(expected);
            assertThat(d.snapshot().digest()).isNotEqualTo(expected);
            assertThat(e.snapshot().digest()).isNotEqualTo(expected);
        }
    }

    @Test
    void onlyTheNewestStepsAreKept() {
        Transcript t = new Transcript(new long[]{1});
        for (int i = 0; i < Transcript.MAX_STEPS + 10; i++) {
            t.stepped(new Transcript.Step(i, i, 1, 0, List.of()));
        }
        assertThat(t.snapshot().steps()).hasSize(Transcript.MAX_STEPS);
        assertThat(t.snapshot().steps().get(0).batch()).isEqualTo(10);
    }
}
