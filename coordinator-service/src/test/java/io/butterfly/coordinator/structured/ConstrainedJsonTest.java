package io.butterfly.coordinator.structured;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.testsupport.RandomSchemas;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Seeded random schemas of the supported subset ({@link RandomSchemas}), generated under the mask by a "model" of
 * random logits (whose unconstrained output would be gibberish) through the real sampler: every output parses and
 * validates against its schema, and the same tokens replayed give the same states and masks. The same schemas on a
 * random transformer through a cluster: RandomSchemasOnARandomModelIT.
 */
class ConstrainedJsonTest {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final int END = 0;

    @Test
    void randomSchemasAlwaysGiveValidJson() {
        for (int seed = 0; seed < 150; seed++) {
            Random r = new Random(seed);
            boolean strict = r.nextBoolean();
            ObjectNode schema = RandomSchemas.object(r, strict);
            Vocabulary vocabulary = randomVocabulary(new Random(seed * 31L + 7));
            Grammar grammar = JsonSchemaGrammar.compile(schema, strict);
            Sampler sampler = new Sampler(new SamplingParams(r.nextBoolean() ? 0 : 1.0, 1.0, seed, 0));
            List<Long> tokens = generate(grammar, vocabulary, sampler, new Random(seed), 4000);
            String text = text(vocabulary, tokens);
            JsonNode value = JSON.readTree(text);
            assertThat(RandomSchemas.validates(schema, value)).as("seed %d: %s against %s", seed, text, schema).isTrue();
            // Replayed, the same tokens pass through the same states: the masks are those of the first run.
            TokenConstraint replay = new TokenConstraint(grammar, vocabulary);
            for (long t : tokens) {
                assertThat(replay.allowed().get((int) t)).isTrue();
                replay.accept(t);
            }
            assertThat(replay.finished() || replay.allowed().get(END)).isTrue();
        }
    }

    @Test
    void jsonObjectGivesAnObject() {
        for (int seed = 0; seed < 20; seed++) {
            Vocabulary v = randomVocabulary(new Random(seed));
            List<Long> tokens = generate(JsonSchemaGrammar.anyObject(), v,
                    new Sampler(new SamplingParams(1.0, 1.0, seed, 0)), new Random(seed), 200_000);
            assertThat(JSON.readTree(text(v, tokens)).isObject()).isTrue();
        }
    }

    @Test
    void textsOutsideTheGrammarAreRefused() {
        Grammar g = JsonSchemaGrammar.compile(JSON.readTree("""
                {"type":"object","properties":{"a":{"type":"integer"},"b":{"enum":["x","yz"]},
                 "c":{"type":["string","null"],"maxLength":2}},"required":["a","b","c"],"additionalProperties":false}
                """), true);
        assertThat(g.read("{\"a\":-12,\"b\":\"yz\",\"c\":null}").finished()).isTrue();
        assertThat(g.read("{\"a\":0,\"b\":\"x\",\"c\":\"\\u00e9z\"}").finished()).isTrue();
        assertThat(g.read("{\"a\":1.5")).isNull();
        assertThat(g.read("{\"a\":01")).isNull();
        assertThat(g.read("{\"b\"")).isNull();
        assertThat(g.read("{\"a\":1,\"b\":\"y\"}")).isNull();
        assertThat(g.read("{\"a\":1,\"b\":\"x\",\"c\":\"abc\"")).isNull();
        assertThat(g.read("{\"a\":1,\"b\":\"x\",\"c\":null,")).isNull();
        assertThat(g.read(" {")).isNull();
        Grammar number = JsonSchemaGrammar.compile(JSON.readTree("{\"type\":\"number\"}"), false);
        assertThat(number.read("-0.5e+3").accepting()).isTrue();
        assertThat(number.read("-0.5e+3").finished()).isFalse();
        assertThat(number.read("1.")).isNotNull();
        assertThat(number.read("1.").accepting()).isFalse();
    }

    @Test
    void recursiveDefinitionsAndOptionalProperties() {
        Grammar g = JsonSchemaGrammar.compile(JSON.readTree("""
                {"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                  "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
                 "$ref":"#/$defs/node"}
                """), false);
        assertThat(g.read("{\"v\":1,\"kids\":[{\"v\":2},{\"v\":3,\"kids\":[]}]}").finished()).isTrue();
        assertThat(g.read("{\"v\":1}").finished()).isTrue();
        assertThat(g.read("{\"kids\"")).isNull();
    }

    @Test
    void unsupportedOrNonStrictSchemasAreRefusedNamingWhere() {
        assertThatThrownBy(() -> JsonSchemaGrammar.compile(JSON.readTree(
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"pattern\":\"x+\"}}}"), false))
                .isInstanceOf(SchemaException.class)
                .satisfies(e -> assertThat(((SchemaException) e).path()).isEqualTo("#/properties/a/pattern"));
        assertThatThrownBy(() -> JsonSchemaGrammar.compile(JSON.readTree(
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"), true))
                .isInstanceOf(SchemaException.class).hasMessageContaining("additionalProperties");
        assertThatThrownBy(() -> JsonSchemaGrammar.compile(JSON.readTree(
                "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}"),
                true)).isInstanceOf(SchemaException.class).hasMessageContaining("required");
        assertThatThrownBy(() -> JsonSchemaGrammar.compile(JSON.readTree("{\"$ref\":\"#/$defs/none\"}"), false))
                .isInstanceOf(SchemaException.class).hasMessageContaining("$ref");
    }

    /** Generates under the mask until the value is finished or an end token comes. */
    static List<Long> generate(Grammar grammar, Vocabulary vocabulary, Sampler sampler, Random model, int maxSteps) {
        TokenConstraint c = new TokenConstraint(grammar, vocabulary);
        List<Long> tokens = new ArrayList<>();
        for (int step = 0; step < maxSteps && !c.finished(); step++) {
            float[] logits = new float[vocabulary.size()];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (model.nextGaussian() * 3);
            }
            c.mask(logits);
            long t = sampler.choose(logits, step).tokenId();
            tokens.add(t);
            c.accept(t);
        }
        assertThat(c.finished()).as("finished within %d steps", maxSteps).isTrue();
        return tokens;
    }

    /** The tokens' bytes read as UTF-8; malformed UTF-8 (a character left unfinished) is refused. */
    static String text(Vocabulary v, List<Long> tokens) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (long t : tokens) {
            if (!v.isEnd((int) t)) {
                b.writeBytes(v.bytes((int) t));
            }
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b.toByteArray())).toString();
        } catch (CharacterCodingException e) {
            throw new AssertionError("not well-formed UTF-8: " + HexFormat.of().formatHex(b.toByteArray()), e);
        }
    }

    /**
     * Every printable ASCII character, some multi-character pieces of JSON and words, 'é' whole, the bytes 80-FF alone
     * (what other characters are spelled with, as in a byte-level BPE), a special and an end token.
     */
    static Vocabulary randomVocabulary(Random r) {
        Set<String> texts = new LinkedHashSet<>();
        for (char c = 0x20; c < 0x7f; c++) {
            texts.add(String.valueOf(c));
        }
        texts.add("\n");
        texts.add("\u00e9");
        texts.add("\ufffd");
        String[] pieces = {"{\"", "\":", "\",\"", "\"}", "}}", "[]", "[{", "}]", "true", "false", "null", "12", "0.",
                "-1", "e+", "\\n", "\\u00", "name", "\"a", "id", " the", "\":\"", "\"},{\"", "}", ",\""};
        texts.addAll(List.of(pieces));
        String alphabet = "abcxyz\"{}[],:0123456789.-e\\ ";
        while (texts.size() < 400) {
            StringBuilder b = new StringBuilder();
            for (int i = 1 + r.nextInt(5); i > 0; i--) {
                b.append(alphabet.charAt(r.nextInt(alphabet.length())));
            }
            texts.add(b.toString());
        }
        List<byte[]> all = new ArrayList<>();
        all.add(new byte[0]); // END
        all.add(new byte[0]); // a special token: never allowed
        for (String t : texts) {
            all.add(t.getBytes(StandardCharsets.UTF_8));
        }
        for (int b = 0x80; b < 0x100; b++) {
            all.add(new byte[]{(byte) b});
        }
        BitSet end = new BitSet();
        end.set(END);
        return new Vocabulary(all.toArray(new byte[0][]), end);
    }
}
