package io.butterfly.coordinator.api.jobs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.jobs.DatasetEntry;
import io.butterfly.coordinator.model.ChatTemplate;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A dataset's JSONL: prompts and conversations read, each bad line refused naming it; stored by its SHA-256. */
class DatasetLinesTest {

    @TempDir
    Path dir;

    @Test
    void promptsAndConversationsAreRead() {
        List<DatasetEntry> entries = DatasetLines.parse(bytes("""
                {"prompt": "Once upon a time", "id": 7}

                {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi", "name": "a"}]}
                """));
        assertThat(entries).containsExactly(new DatasetEntry("Once upon a time", null), new DatasetEntry(null, List.of(
                new ChatTemplate.Message("system", "Be brief.", null), new ChatTemplate.Message("user", "Hi", "a"))));
    }

    @Test
    void aBadLineIsRefusedNamingIt() {
        assertField("{\"prompt\": \"a\"}\n[1]\n", "dataset[2]");
        assertField("{\"prompt\": \"a\"}\n{\"prompt\": 3}", "dataset[2].prompt");
        assertField("{\"prompt\": \"a\", \"messages\": []}", "dataset[1]");
        assertField("{\"messages\": [{\"role\": \"user\"}]}", "dataset[1].messages[0]");
        assertField("{\"prompt\": \"a\"", "dataset[1]");
        assertField("\n \n", "dataset");
    }

    @Test
    void theStoreNamesADatasetByItsSha256AndRefusesAFileThatChanged() throws Exception {
        FileDatasetStore store = new FileDatasetStore(dir);
        byte[] jsonl = bytes("{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n");
        FileDatasetStore.Imported imported = store.store(jsonl);
        assertThat(imported.sha256()).isEqualTo(FileDatasetStore.sha256(jsonl)).hasSize(64);
        assertThat(new FileDatasetStore(dir).entries(imported.sha256())).contains(imported.entries());
        java.nio.file.Files.writeString(dir.resolve(imported.sha256() + ".jsonl"), "{\"prompt\": \"c\"}\n");
        assertThat(new FileDatasetStore(dir).entries(imported.sha256())).isEmpty();
        assertThat(new FileDatasetStore(dir).entries("00".repeat(32))).isEmpty();
    }

    private static void assertField(String jsonl, String field) {
        assertThatThrownBy(() -> DatasetLines.parse(bytes(jsonl))).isInstanceOfSatisfying(InvalidRequestException.class,
                e -> assertThat(e.field()).isEqualTo(field));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
