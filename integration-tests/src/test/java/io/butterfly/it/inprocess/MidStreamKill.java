package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** A streamed generation whose worker is killed at its fifth token, resumed as {@code ./butterfly generate --stream} does. */
final class MidStreamKill {

    private MidStreamKill() {
    }

    /** The index of the longest of {@code expected}: its stream must still be generating when the kill lands. */
    static int longest(List<List<Long>> expected) {
        int longest = 0;
        for (int i = 1; i < expected.size(); i++) {
            longest = expected.get(i).size() > expected.get(longest).size() ? i : longest;
        }
        return longest;
    }

    /** Streams {@code body} from {@code /api/v1/inference/stream}, kills {@code victim} at its fifth token; the tokens. */
    static List<Long> stream(InProcessCluster cluster, ExecutorService clients, String body, String victim)
            throws Exception {
        CountDownLatch underWay = new CountDownLatch(1);
        List<Long> streamed = new ArrayList<>();
        Future<?> stream = clients.submit(() -> {
            new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"),
                    Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { }).post(body, (name, data) -> {
                        if (name.equals("token")) {
                            streamed.add(ClusterApi.JSON.readTree(data).path("token_id").asLong());
                            if (streamed.size() == 5) {
                                underWay.countDown();
                            }
                        }
                    });
            return null;
        });
        assertThat(underWay.await(2, TimeUnit.MINUTES)).as("the stream under way").isTrue();
        cluster.kill(victim);
        stream.get(6, TimeUnit.MINUTES);
        return streamed;
    }
}
