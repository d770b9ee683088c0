package io.butterfly.common.web.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ApiKeysTest {

    @TempDir
    Path dir;

    @Test
    void aKeyHasItsFilesRoleAndNothingElseMatches() throws IOException {
        Random rnd = new Random(34);
        List<String> users = keys(rnd, 20);
        List<String> admins = keys(rnd, 5);
        ApiKeys keys = ApiKeys.load(file("users", users), file("admins", admins));
        assertThat(keys.enabled()).isTrue();
        users.forEach(k -> assertThat(keys.roleOf(k)).as(k).isEqualTo(ApiKeys.Role.USER));
        admins.forEach(k -> assertThat(keys.roleOf(k)).as(k).isEqualTo(ApiKeys.Role.ADMIN));
        for (int i = 0; i < 500; i++) { // near misses of real keys never match
            List<String> from = rnd.nextBoolean() ? users : admins;
            String k = from.get(rnd.nextInt(from.size()));
            String miss = switch (rnd.nextInt(5)) {
                case 0 -> k.substring(0, k.length() - 1);
                case 1 -> k + (char) ('a' + rnd.nextInt(26));
                case 2 -> k.substring(1);
                case 3 -> k.toUpperCase().equals(k) ? k.toLowerCase() : k.toUpperCase();
                default -> {
                    char[] c = k.toCharArray();
                    int at = rnd.nextInt(c.length);
                    c[at] = c[at] == 'x' ? 'y' : 'x';
                    yield new String(c);
                }
            };
            assertThat(keys.roleOf(miss)).as(miss + " from " + k).isEqualTo(ApiKeys.Role.NONE);
        }
        assertThat(keys.roleOf("")).isEqualTo(ApiKeys.Role.NONE);
    }

    @Test
    void blankLinesAndCommentsAreSkippedAndKeysTrimmed() throws IOException {
        Path f = dir.resolve("keys");
        Files.writeString(f, "# user keys\n\n  sk-one  \nsk-two\r\n", StandardCharsets.UTF_8);
        ApiKeys keys = ApiKeys.load(f, null);
        assertThat(keys.roleOf("sk-one")).isEqualTo(ApiKeys.Role.USER);
        assertThat(keys.roleOf("sk-two")).isEqualTo(ApiKeys.Role.USER);
        assertThat(keys.roleOf("# user keys")).isEqualTo(ApiKeys.Role.NONE);
    }

    @Test
    void aFileWithoutKeysOrMissingIsRefusedNotOpen() throws IOException {
        Path empty = Files.writeString(dir.resolve("empty"), "# nothing yet\n\n");
        assertThatThrownBy(() -> ApiKeys.load(empty, null)).hasMessageContaining("holds no key").hasMessageContaining("empty");
        assertThatThrownBy(() -> ApiKeys.load(null, dir.resolve("absent"))).hasMessageContaining("cannot read");
        assertThat(ApiKeys.load(null, null).enabled()).isFalse();
    }

    private Path file(String name, List<String> keys) throws IOException {
        return Files.write(dir.resolve(name), keys, StandardCharsets.UTF_8);
    }

    private static List<String> keys(Random rnd, int n) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            StringBuilder b = new StringBuilder("sk-");
            for (int j = 8 + rnd.nextInt(40); j > 0; j--) {
                b.append((char) ('a' + rnd.nextInt(26)));
            }
            out.add(b.toString());
        }
        return out;
    }
}
