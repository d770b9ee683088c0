package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.coordinator.structured.Grammar;
import io.butterfly.coordinator.structured.JsonSchemaGrammar;
import io.butterfly.coordinator.structured.TokenConstraint;
import io.butterfly.coordinator.structured.Vocabulary;
import io.butterfly.coordinator.tokenizer.DjlTokenizers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * The constrained decoder's vocabulary of a generated model's byte-level BPE (the tokenizer the random-model cluster
 * tests serve): no token spells 'é' whole, its two byte tokens spell C3 and A9 (not U+FFFD), so an enum of 'é' is
 * generated from them, and the answer decodes through the tokenizer to the enum's text.
 */
class ModelVocabularyTest {

    private static final ModelConfig MODEL = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 2048,
            1e-5, 10000.0, false, 1, 2);

    @TempDir
    Path dir;

    @Test
    void aCharacterTwoByteTokensSpellIsGeneratedFromThem() throws Exception {
        try (Tokenizer tokenizer = new DjlTokenizers().open(TestTokenizers.write(MODEL, dir))) {
            Vocabulary v = ModelVocabulary.build(new ServedModel(null, MODEL, tokenizer));
            byte[] e = "\u00e9".getBytes(StandardCharsets.UTF_8);
            assertThat(tokenizer.encode("\u00e9", false)).as("no token spells it whole").hasSize(2);
            int lead = -1;
            int trail = -1;
            for (int id = 0; id < v.size(); id++) {
                byte[] b = v.bytes(id);
                assertThat(b == null ? new byte[0] : b).as("token %d", id).isNotEqualTo(e);
                lead = Arrays.equals(b, new byte[]{e[0]}) ? id : lead;
                trail = Arrays.equals(b, new byte[]{e[1]}) ? id : trail;
            }
            assertThat(lead).isGreaterThanOrEqualTo(0);
            assertThat(trail).isGreaterThanOrEqualTo(0);
            assertThat(tokenizer.decode(new long[]{lead, trail})).isEqualTo("\u00e9");
            assertThat(v.isEnd(MODEL.eosTokenId())).isTrue();

            Grammar g = JsonSchemaGrammar.compile(JsonMapper.builder().build().readTree("""
                    {"type":"object","properties":{"\u00e9t\u00e9":{"enum":["caf\u00e9","\u4e2d\u6587"]}},
                     "required":["\u00e9t\u00e9"],"additionalProperties":false}"""), true);
            for (int pick = 0; pick < 2; pick++) {
                TokenConstraint c = new TokenConstraint(g, v);
                List<Long> ids = new ArrayList<>();
                while (!c.finished()) { // the allowed token of the highest id, or of the lowest: two paths
                    BitSet allowed = c.allowed();
                    long t = pick == 0 ? allowed.length() - 1 : allowed.nextSetBit(0);
                    ids.add(t);
                    c.accept(t);
                }
                String text = tokenizer.decode(ids.stream().mapToLong(Long::longValue).toArray());
                assertThat(text).isIn("{\"\u00e9t\u00e9\":\"caf\u00e9\"}", "{\"\u00e9t\u00e9\":\"\u4e2d\u6587\"}");
            }
        }
    }
}
