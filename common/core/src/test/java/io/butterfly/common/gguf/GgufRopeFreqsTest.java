package io.butterfly.common.gguf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.RopeScaling;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Llama 3.1's RoPE scaling written as llama.cpp's converter writes it ({@code rope_freqs.weight}) reads back into the
 * {@code rope_scaling} it was written from, so the rotary tables are those of the model's Hugging Face directory.
 */
class GgufRopeFreqsTest {

    /** Plain RoPE's inverse frequencies as the stages compute them (RotaryEmbedding). */
    private static float[] plain(int headDim, double theta) {
        float[] out = new float[headDim / 2];
        for (int j = 0; j < out.length; j++) {
            out[j] = 1.0f / (float) Math.pow(theta, (float) (2 * j) / (float) headDim);
        }
        return out;
    }

    @Test
    void metasLlama3ScalingsReadBackAsWritten() {
        RopeScaling llama31 = RopeScaling.llama3(8.0, 1.0, 4.0, 8192);
        RopeScaling llama32 = RopeScaling.llama3(32.0, 1.0, 4.0, 8192);
        for (RopeScaling s : new RopeScaling[]{llama31, llama32}) {
            float[] divisors = GgufRopeFreqs.divisors(128, 500_000.0, s);
            assertThat(divisors).hasSize(64);
            assertThat(divisors[0]).isEqualTo(1f);
            assertThat(divisors[63]).isEqualTo((float) s.factor());
            assertThat(GgufRopeFreqs.scaling(divisors, 128, 500_000.0)).isEqualTo(s);
        }
        // Llama 3.1 8B's divisors between the bands, as llama.cpp's converter computes them (2048 < wavelength < 8192).
        float[] d = GgufRopeFreqs.divisors(128, 500_000.0, llama31);
        int between = 0;
        for (float v : d) {
            between += v > 1 && v < 8 ? 1 : 0;
        }
        assertThat(between).isEqualTo(6);
    }

    /**
     * Seeded random heads, bases and scalings: the scaling read back gives the same divisors, and with Llama 3's
     * low_freq_factor of 1 and two or more frequencies between the bands (what pins the band down) it is the scaling
     * written, so the rotary tables are the same bits.
     */
    @Test
    void randomScalingsReadBackToTheSameTables() {
        Random random = new Random(31_46L);
        int exact = 0;
        for (int trial = 0; trial < 500; trial++) {
            int headDim = 2 * (8 + random.nextInt(120));
            double theta = new double[]{10_000, 500_000, 1_000_000, 100 + random.nextInt(2_000_000)}[random.nextInt(4)];
            double factor = new double[]{2, 4, 8, 16, 32, 64}[random.nextInt(6)];
            double high = new double[]{2, 4, 8}[random.nextInt(3)];
            RopeScaling written = RopeScaling.llama3(factor, 1.0, high, 16 + random.nextInt(32_768));
            float[] divisors = GgufRopeFreqs.divisors(headDim, theta, written);
            String label = "trial " + trial + ": head " + headDim + ", theta " + theta + ", " + written;
            RopeScaling read = GgufRopeFreqs.scaling(divisors, headDim, theta);
            if (read == null) { // every wavelength under the band: no divisor but 1
                assertThat(divisors).as(label).containsOnly(1f);
                continue;
            }
            float[] again = GgufRopeFreqs.divisors(headDim, theta, read);
            for (int j = 0; j < divisors.length; j++) {
                assertThat(again[j]).as(label + " divisor " + j).isCloseTo(divisors[j],
                        org.assertj.core.data.Percentage.withPercentage(1e-3));
            }
            int between = 0;
            for (float v : divisors) {
                between += v > 1 && v < factor ? 1 : 0;
            }
            if (between >= 2) {
                assertThat(read).as(label).isEqualTo(written);
                assertThat(read.apply(plain(headDim, theta))).as(label).isEqualTo(written.apply(plain(headDim, theta)));
                exact++;
            }
        }
        assertThat(exact).isGreaterThan(200);
    }

    @Test
    void divisorsNoLlama3ScalingGivesAreRefusedNamingTheTensor() {
        float[] divisors = GgufRopeFreqs.divisors(128, 500_000.0, RopeScaling.llama3(8.0, 1.0, 4.0, 8192));
        float[] bent = divisors.clone();
        bent[31] *= 1.01f; // one divisor between the bands off the curve
        assertThatThrownBy(() -> GgufRopeFreqs.scaling(bent, 128, 500_000.0))
                .isInstanceOf(InvalidGgufException.class).hasMessageContaining("rope_freqs.weight");
        assertThatThrownBy(() -> GgufRopeFreqs.scaling(new float[]{1, 2, 0.5f, 8}, 8, 10_000.0))
                .isInstanceOf(InvalidGgufException.class).hasMessageContaining("rope_freqs.weight");
        assertThatThrownBy(() -> GgufRopeFreqs.scaling(new float[]{1, 8}, 128, 10_000.0))
                .isInstanceOf(InvalidGgufException.class).hasMessageContaining("64 frequencies");
        assertThat(GgufRopeFreqs.scaling(new float[]{1, 1, 1, 1}, 8, 10_000.0)).isNull();
    }
}
