package io.butterfly.discovery.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.when;

import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.membership.MemberState;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Discovery's {@code GET /api/v1/members}, name for name and value for value: a joined worker with its capabilities
 * and a static seed known only by its address must equal the answer recorded in
 * {@code src/test/resources/rest-json/} (object members in any order). After a deliberate change of the API,
 * {@code -Dbutterfly.rest-json.record=true} writes it anew.
 */
class MembersRestJsonTest {

    private static final Path RECORDED = Path.of("src/test/resources/rest-json");
    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    @Test
    void aJoinedWorkerAndASeed() throws IOException {
        MembershipStore store = mock(MembershipStore.class);
        Capabilities caps = new Capabilities(8, 32_000_000_000L, 16_000_000_000L,
                List.of(new Capabilities.Gpu(0, "none", 0)), 41.5, "cpu", 12.25, "SSD", 0, 4);
        when(store.members(null)).thenReturn(List.of(
                new MemberView("worker-0", "worker", "127.0.0.1", 9090, 8090, "0.1.0", 1_796_000_000_000L,
                        1_796_000_005_250L, caps, "00ff", true),
                new MemberView("coordinator-0", "coordinator", "10.0.0.5", 9080, 8080, null, 0, 0, null, null, true,
                        MemberState.REACHABLE)));
        assertRecorded("members", new MembersController(store).members(null));
    }

    private static void assertRecorded(String name, Object answer) throws IOException {
        Path file = RECORDED.resolve(name + ".json");
        String actual = JSON.writeValueAsString(answer);
        if (Boolean.getBoolean("butterfly.rest-json.record")) {
            Files.createDirectories(RECORDED);
            Files.writeString(file, actual + "\n");
        }
        JsonNode expected = JSON.readTree(Files.readString(file));
        assertThat(JSON.readTree(actual)).as(name).isEqualTo(expected);
    }
}
