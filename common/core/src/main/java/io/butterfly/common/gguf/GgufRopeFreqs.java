package io.butterfly.common.gguf;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.quant.GgmlType;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Llama 3.1's RoPE scaling in GGUF form. llama.cpp's converter ({@code convert_hf_to_gguf.py},
 * {@code LlamaModel.generate_extra_tensors}) writes a config's {@code rope_scaling} of type {@code llama3} as a tensor
 * {@code rope_freqs.weight} of one float32 divisor per rotary frequency: 1 where the wavelength is under
 * {@code original_max_position_embeddings / high_freq_factor}, {@code factor} where it is over
 * {@code original_max_position_embeddings / low_freq_factor}, {@code 1 / ((1 - smooth) / factor + smooth)} between;
 * llama.cpp divides each frequency by its divisor. That is transformers' {@code _compute_llama3_parameters} (which
 * multiplies by the inverse), so the import reads the tensor back into the {@code rope_scaling} it was written from and
 * the stages compute the rotary tables exactly as for the model's Hugging Face directory.
 *
 * <p>The divisors fix the scaling's shape ({@code factor}, and where the band between starts and ends) but not the
 * three numbers it is written with: every Llama 3.x config has {@code low_freq_factor} 1, so that is assumed, and the
 * others follow from the band; they are checked by writing the divisors again. Divisors no such scaling gives are
 * refused, naming the tensor.
 */
public final class GgufRopeFreqs {

    /** The tensor's name in a GGUF file (one for the whole model). */
    public static final String TENSOR = "rope_freqs.weight";

    /** How far a divisor read back may be from the one its scaling gives: float32 rounding, several times over. */
    private static final double TOLERANCE = 1e-5;

    /** high_freq_factor values tried when the divisors do not pin it down, Llama 3's first. */
    private static final double[] HIGH_FREQ_FACTORS = {4, 2, 8, 3, 6, 16, 1.5, 32};

    private GgufRopeFreqs() {
    }

    /**
     * The divisors llama.cpp's converter writes for a {@code llama3} scaling, computed in float32 operation by
     * operation as its torch tensors do.
     */
    public static float[] divisors(int headDim, double theta, RopeScaling s) {
        if (!RopeScaling.LLAMA3.equals(s.type())) {
            throw new IllegalArgumentException("only llama3 scaling is written as " + TENSOR + ", not " + s.type());
        }
        float[] out = new float[headDim / 2];
        double lowFreqWavelen = s.originalMaxPositions() / s.lowFreqFactor();
        double highFreqWavelen = s.originalMaxPositions() / s.highFreqFactor();
        float factor = (float) s.factor();
        float old = (float) s.originalMaxPositions();
        float low = (float) s.lowFreqFactor();
        float span = (float) (s.highFreqFactor() - s.lowFreqFactor());
        for (int j = 0; j < out.length; j++) {
            float wavelen = (float) (2 * Math.PI) / inverseFrequency(j, headDim, theta);
            if (wavelen < highFreqWavelen) {
                out[j] = 1;
            } else if (wavelen > lowFreqWavelen) {
                out[j] = factor;
            } else {
                float smooth = (old / wavelen - low) / span;
                out[j] = 1f / ((1 - smooth) / factor + smooth);
            }
        }
        return out;
    }

    /**
     * The {@code llama3} scaling these divisors were written from; null when every divisor is 1 (plain RoPE).
     *
     * @throws InvalidGgufException no such scaling gives them
     */
    public static RopeScaling scaling(float[] divisors, int headDim, double theta) {
        if (divisors.length != headDim / 2) {
            throw new InvalidGgufException(TENSOR + " holds " + divisors.length + " values; a head of " + headDim
                    + " dimensions rotates " + headDim / 2 + " frequencies");
        }
        float factor = 1;
        for (float d : divisors) {
            if (!(d >= 1) || Float.isInfinite(d)) {
                throw refused("a divisor of " + d);
            }
            factor = Math.max(factor, d);
        }
        if (factor == 1) {
            return null;
        }
        // Between the bands: smooth = A / wavelength - B, with A = original / (high - low), B = low / (high - low).
        int first = -1;
        int last = -1;
        double maxOnes = 0;
        for (int j = 0; j < divisors.length; j++) {
            double wavelen = 2 * Math.PI / inverseFrequency(j, headDim, theta);
            if (divisors[j] == 1) {
                maxOnes = Math.max(maxOnes, wavelen);
            } else if (divisors[j] != factor) {
                first = first < 0 ? j : first;
                last = j;
            }
        }
        List<double[]> candidates = new ArrayList<>(); // {high_freq_factor, original_max_position_embeddings}
        if (first >= 0 && first != last) {
            double x1 = 1 / wavelength(first, headDim, theta);
            double x2 = 1 / wavelength(last, headDim, theta);
            double s1 = smooth(divisors[first], factor);
            double s2 = smooth(divisors[last], factor);
            double a = (s1 - s2) / (x1 - x2);
            double b = a * x1 - s1;
            candidates.add(new double[]{Math.round((1 + 1 / b) * 64) / 64.0, a / b});
        } else {
            // One frequency between the bands or none: the band is not pinned down; Llama 3's 4 first, then others.
            for (double high : HIGH_FREQ_FACTORS) {
                double original = first >= 0
                        ? (smooth(divisors[first], factor) * (high - 1) + 1) * wavelength(first, headDim, theta)
                        : Math.floor(high * maxOnes) + 1;
                candidates.add(new double[]{high, original});
            }
        }
        String mismatch = "no band of llama3 scaling between its divisors of 1 and " + factor;
        for (double[] c : candidates) {
            RopeScaling scaling;
            try {
                scaling = RopeScaling.llama3(factor, 1.0, c[0], (int) Math.round(c[1]));
            } catch (IllegalArgumentException e) {
                mismatch = e.getMessage();
                continue;
            }
            float[] again = divisors(headDim, theta, scaling);
            int j = 0;
            while (j < divisors.length && Math.abs(again[j] - divisors[j]) <= TOLERANCE * divisors[j]) {
                j++;
            }
            if (j == divisors.length) {
                return scaling;
            }
            mismatch = "divisor " + j + " is " + divisors[j] + " where the closest llama3 scaling (" + scaling
                    + ") gives " + again[j];
        }
        throw refused(mismatch);
    }

    /** Writes {@code config}'s {@code llama3} scaling as the tensor, if it has one. */
    public static void write(ModelConfig config, GgufWriter w) {
        RopeScaling s = config.ropeScaling();
        if (s == null || !RopeScaling.LLAMA3.equals(s.type())) {
            return;
        }
        float[] values = divisors(config.headDim(), config.ropeTheta(), s);
        w.tensor(TENSOR, GgmlType.F32, new long[]{values.length}, out -> {
            ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            for (float v : values) {
                b.putFloat(v);
            }
            out.write(b.array());
        });
    }

    /** The file's divisors, read as float32. */
    static float[] read(GgufFile f, GgufTensor t) throws IOException {
        if (t.type() != GgmlType.F32 || t.dims().length != 1) {
            throw new InvalidGgufException(f.path() + ": " + TENSOR + " is " + t.type() + " of " + t.dims().length
                    + " dimensions; llama.cpp writes one float32 row");
        }
        ByteBuffer b = ByteBuffer.allocate((int) t.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        f.read(t, 0, b);
        b.flip();
        float[] values = new float[(int) t.numElements()];
        for (int j = 0; j < values.length; j++) {
            values[j] = b.getFloat();
        }
        return values;
    }

    /** Plain RoPE's inverse frequency {@code j}, in float32 as transformers (and the stages) compute it. */
    private static float inverseFrequency(int j, int headDim, double theta) {
        float exponent = (float) (2 * j) / (float) headDim;
        return 1.0f / (float) Math.pow(theta, exponent);
    }

    private static double wavelength(int j, int headDim, double theta) {
        return 2 * Math.PI / inverseFrequency(j, headDim, theta);
    }

    /** Where a divisor lies between 1 (smooth 1) and the factor (smooth 0). */
    private static double smooth(float divisor, float factor) {
        return (1.0 / divisor - 1.0 / factor) / (1 - 1.0 / factor);
    }

    private static InvalidGgufException refused(String why) {
        return new InvalidGgufException(TENSOR + " is not Llama 3's llama3 RoPE scaling (low_freq_factor 1): " + why
                + "; import the model's Hugging Face directory instead");
    }
}
