package io.butterfly.coordinator.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.coordinator.model.Tokenizer;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * A token's bytes as its decoder spells them: byte-level BPE (every token of a generated tokenizer, checked against the
 * tokenizers library's own decoding of seeded random token sequences) and SentencePiece's byte fallback.
 */
class TokenBytesTest {

    private static final ModelConfig MODEL = new ModelConfig(Architecture.LLAMA, 1, 64, 4, 2, 96, 600, 64, 1e-5,
            10000.0, false, 1, 2);

    @TempDir
    Path dir;

    @Test
    void byteLevelTokensConcatenateToWhatTheLibraryDecodes() throws Exception {
        Path file = dir.resolve("tokenizer.json");
        TokenizerGenerator.write(MODEL, file);
        try (Tokenizer t = new DjlTokenizers().open(file)) {
            int partial = 0;
            for (int id = 3; id < MODEL.vocabSize(); id++) {
                byte[] b = t.tokenBytes(id);
                if (b == null) {
                    continue; // the special tokens
                }
                partial += new String(b, StandardCharsets.UTF_8).contains("\ufffd") ? 1 : 0;
            }
            assertThat(partial).as("byte tokens that are no character alone").isGreaterThanOrEqualTo(128);
            assertThat(t.tokenBytes(MODEL.eosTokenId())).isNull();
            Random r = new Random(5);
            for (int i = 0; i < 300; i++) {
                long[] ids = r.longs(1 + r.nextInt(8), 3, MODEL.vocabSize() - 2).toArray();
                ByteArrayOutputStream all = new ByteArrayOutputStream();
                boolean known = true;
                for (long id : ids) {
                    byte[] b = t.tokenBytes(id);
                    known &= b != null;
                    if (b != null) {
                        all.writeBytes(b);
                    }
                }
                if (known) {
                    String decoded = t.decode(ids);
                    String ours = new String(all.toByteArray(), StandardCharsets.UTF_8);
                    // the ByteLevel decoder drops one leading space (add_prefix_space): compare past it
                    assertThat(decoded).as("%s", Arrays.toString(ids)).isIn(ours, ours.startsWith(" ") ? ours.substring(1) : ours);
                }
            }
        }
    }

    @Test
    void byteFallbackTokensAreTheirByte() {
        TokenBytes b = TokenBytes.of(JsonMapper.builder().build().readTree("""
                {"added_tokens":[{"id":0,"content":"<unk>","special":true}],
                 "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},
                   {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
                 "model":{"type":"BPE","vocab":{"<unk>":0,"<0xC3>":1,"<0xA9>":2,"\u2581caf":3}}}"""));
        assertThat(b.of(1)).containsExactly(0xC3);
        assertThat(b.of(2)).containsExactly(0xA9);
        assertThat(b.of(0)).isNull();
        assertThat(b.of(3)).as("a whole-text token: its decoded text says it").isNull();
        assertThat(b.of(9)).isNull();
    }
}
