package io.butterfly.common.hash;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

class Sha256Test {

    @Test
    void matchesTheFips180Vectors() {
        assertThat(Sha256.hex("abc".getBytes(StandardCharsets.US_ASCII)))
                .isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assertThat(Sha256.hex(new byte[0]))
                .isEqualTo("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    @Test
    void eachNewDigestStartsEmptyAndIsIndependent() {
        MessageDigest a = Sha256.newDigest();
        a.update("abc".getBytes(StandardCharsets.US_ASCII));
        MessageDigest b = Sha256.newDigest();
        assertThat(Sha256.toHex(b.digest())).startsWith("e3b0c442");
        assertThat(Sha256.toHex(a.digest())).startsWith("ba7816bf");
    }

    @Test
    void digestsMadeConcurrentlyAgreeWithTheSequentialOnes() throws Exception {
        Random random = new Random(3);
        List<byte[]> inputs = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            byte[] data = new byte[random.nextInt(100_000)];
            random.nextBytes(data);
            inputs.add(data);
        }
        List<String> expected = inputs.stream().map(Sha256::hex).toList();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int round = 0; round < 8; round++) {
                for (byte[] data : inputs) {
                    results.add(pool.submit(() -> Sha256.hex(data)));
                }
            }
            for (int i = 0; i < results.size(); i++) {
                assertThat(results.get(i).get()).isEqualTo(expected.get(i % inputs.size()));
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
