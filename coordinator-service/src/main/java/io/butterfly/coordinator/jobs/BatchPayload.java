package io.butterfly.coordinator.jobs;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A batch's samples as JOB_RESPONSE carries them (docs/jobs.md), big-endian: {@code [count:u32]}, then per sample
 * {@code [position:u64][seed:u64][finish:u8][token_count:u32][token_id:u32]*[text_len:u32][text UTF-8]}, finish 0 for
 * "stop" and 1 for "length". The same samples always make the same bytes.
 */
public final class BatchPayload {

    public static final int STOP = 0;
    public static final int LENGTH = 1;

    private BatchPayload() {
    }

    public static byte[] encode(List<Sample> samples) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(samples.size());
            for (Sample s : samples) {
                out.writeLong(s.position());
                out.writeLong(s.seed());
                out.writeByte("length".equals(s.finishReason()) ? LENGTH : STOP);
                out.writeInt(s.tokenIds().size());
                for (long id : s.tokenIds()) {
                    out.writeInt((int) id);
                }
                byte[] text = s.text().getBytes(StandardCharsets.UTF_8);
                out.writeInt(text.length);
                out.write(text);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("a byte array does not fail", e);
        }
        return bytes.toByteArray();
    }
}
