package io.butterfly.coordinator.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** A batch's payload reads back field by field as docs/jobs.md lays it out. */
class BatchPayloadTest {

    @Test
    void randomBatchesReadBackAsDocumented() {
        Random random = new Random(7);
        for (int round = 0; round < 200; round++) {
            List<Sample> samples = new ArrayList<>();
            for (int i = random.nextInt(6); i > 0; i--) {
                List<Long> tokens = random.longs(random.nextInt(20), 0, 50_000).boxed().toList();
                StringBuilder text = new StringBuilder();
                random.ints(random.nextInt(30), 0x20, 0x2000).forEach(text::appendCodePoint);
                samples.add(new Sample(random.nextInt(1000), random.nextLong(), random.nextBoolean() ? "stop" : "length",
                        tokens, text.toString()));
            }
            byte[] bytes = BatchPayload.encode(samples);
            assertThat(BatchPayload.encode(samples)).isEqualTo(bytes);
            assertThat(read(bytes)).isEqualTo(samples);
        }
    }

    private static List<Sample> read(byte[] bytes) {
        ByteBuffer in = ByteBuffer.wrap(bytes);
        List<Sample> out = new ArrayList<>();
        for (int n = in.getInt(); n > 0; n--) {
            long position = in.getLong();
            long seed = in.getLong();
            String finish = in.get() == BatchPayload.LENGTH ? "length" : "stop";
            List<Long> tokens = new ArrayList<>();
            for (int t = in.getInt(); t > 0; t--) {
                tokens.add(in.getInt() & 0xFFFFFFFFL);
            }
            byte[] text = new byte[in.getInt()];
            in.get(text);
            out.add(new Sample(position, seed, finish, tokens, new String(text, StandardCharsets.UTF_8)));
        }
        assertThat(in.remaining()).isZero();
        return out;
    }
}
