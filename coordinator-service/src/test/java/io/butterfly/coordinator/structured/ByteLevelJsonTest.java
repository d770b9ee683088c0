package io.butterfly.coordinator.structured;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.testsupport.RandomSchemas;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
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
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * The matcher over bytes on a byte-level vocabulary, as a GPT-2 style BPE's: every byte is a token of its own and the
 * merges are cut from UTF-8 text at any byte, so that many tokens begin or end inside a character and some characters
 * no token spells whole. Literals with such characters ({@code enum}, {@code const}, property names) and strings are
 * generated from tokens that split them; every output is well-formed UTF-8, parses and validates, and a replay of its
 * tokens passes the same states and masks (what a resume rebuilds).
 */
class ByteLevelJsonTest {

    private static final ObjectMapper JSON = JsonMapper.builder().build();
    private static final int END = 0;
    /** Characters of one to four UTF-8 bytes, and some JSON has to escape. */
    private static final String[] CHARS = {"a", "b", "z", "0", " ", "\u00e9", "\u00fc", "\u00df", "\u4e2d", "\u6587",
            "\u20ac", "\ud83e\udd8b", "\ud800\udf48", "\"", "\\", "\n"};

    @Test
    void aCharacterNoTokenSpellsIsGeneratedFromItsBytes() {
        // only the 256 byte tokens and ASCII merges: 'é' is C3 A9, '中' E4 B8 AD, '🦋' F0 9F A6 8B, each split
        Vocabulary v = vocabulary(List.of("{\"", "\":", "\"}", "r"), new Random(0), 0);
        JsonNode schema = JSON.readTree("""
                {"type":"object","properties":{"é":{"enum":["rüd","中","🦋"]},"k":{"const":"ß"}},
                 "required":["é","k"],"additionalProperties":false}""");
        Grammar g = JsonSchemaGrammar.compile(schema, true);
        TokenConstraint c = new TokenConstraint(g, v);
        c.accept(id(v, "{\""));
        assertThat(c.allowed().stream().mapToObj(t -> HexFormat.of().formatHex(v.bytes(t))).toList())
                .as("after {\" only the first byte of 'é'").containsExactly("c3");
        Set<String> seen = new LinkedHashSet<>();
        for (int seed = 0; seed < 40; seed++) {
            Generation out = generate(g, v, new Sampler(new SamplingParams(1.0, 1.0, seed, 0)), new Random(seed));
            JsonNode value = JSON.readTree(out.text);
            assertThat(RandomSchemas.validates(schema, value)).as(out.text).isTrue();
            seen.add(value.get("\u00e9").stringValue());
        }
        assertThat(seen).containsExactlyInAnyOrder("r\u00fcd", "\u4e2d", "\ud83e\udd8b");
    }

    @Test
    void randomNonAsciiSchemasOnRandomByteLevelVocabularies() {
        int splitTokens = 0;
        int nonAscii = 0;
        for (int seed = 0; seed < 200; seed++) {
            Random r = new Random(seed);
            boolean strict = r.nextBoolean();
            ObjectNode schema = seed % 2 == 0 ? RandomSchemas.object(r, strict) : nonAsciiSchema(r, 0, strict);
            Grammar grammar = JsonSchemaGrammar.compile(schema, strict);
            List<String> corpus = new ArrayList<>(List.of(schema.toString(), words(r, 20)));
            Vocabulary v = vocabulary(corpus, new Random(seed * 31L + 7), 300);
            Sampler sampler = new Sampler(new SamplingParams(r.nextBoolean() ? 0 : 1.0, 1.0, seed, 0));
            Generation out = generate(grammar, v, sampler, new Random(seed));
            JsonNode value = JSON.readTree(out.text);
            assertThat(RandomSchemas.validates(schema, value)).as("seed %d: %s against %s", seed, out.text, schema)
                    .isTrue();
            // replayed, the same tokens pass through the same states: each mask is the first run's
            TokenConstraint replay = new TokenConstraint(grammar, v);
            for (int i = 0; i < out.tokens.size(); i++) {
                assertThat(replay.allowed()).as("seed %d step %d", seed, i).isEqualTo(out.masks.get(i));
                replay.accept(out.tokens.get(i));
            }
            assertThat(replay.finished()).isTrue();
            for (long t : out.tokens) {
                splitTokens += t != END && !wellFormed(v.bytes((int) t)) ? 1 : 0;
            }
            nonAscii += out.text.chars().anyMatch(ch -> ch >= 0x80) ? 1 : 0;
        }
        System.out.printf("ByteLevelJsonTest: 200 schemas, %d answers with non-ASCII text, %d tokens chosen that end"
                + " or begin inside a character%n", nonAscii, splitTokens);
        assertThat(nonAscii).isGreaterThan(100);
        assertThat(splitTokens).isGreaterThan(200);
    }

    @Test
    void stringsTakeOnlyWellFormedUtf8() {
        Grammar string = JsonSchemaGrammar.compile(JSON.readTree("{\"type\":\"string\"}"), false);
        assertThat(read(string, "22 f0 9f a6 8b c3 a9 e4 b8 ad 22").finished()).isTrue();
        assertThat(read(string, "22 f0 9f a6")).as("a character begun").isNotNull();
        assertThat(read(string, "22 f0 9f a6 22")).as("a quote inside a character").isNull();
        assertThat(read(string, "22 c0 80")).as("overlong").isNull();
        assertThat(read(string, "22 e0 9f bf")).as("overlong").isNull();
        assertThat(read(string, "22 ed a0 80")).as("a surrogate").isNull();
        assertThat(read(string, "22 f4 90 80 80")).as("past U+10FFFF").isNull();
        assertThat(read(string, "22 f5")).isNull();
        assertThat(read(string, "22 80")).as("a stray continuation byte").isNull();
        assertThat(read(string, "22 c3 41")).as("a character cut short").isNull();
        Grammar one = JsonSchemaGrammar.compile(JSON.readTree("{\"type\":\"string\",\"maxLength\":1}"), false);
        assertThat(one.read("\"\ud83e\udd8b\"").finished()).as("one character of four bytes").isTrue();
        assertThat(one.read("\"\u00e9a")).isNull();
        Grammar literal = JsonSchemaGrammar.compile(JSON.readTree("{\"enum\":[\"\u00e9\",\"\u00e8\"]}"), false);
        assertThat(read(literal, "22 c3")).as("both begin with C3").isNotNull();
        assertThat(read(literal, "22 c3 a8 22").finished()).isTrue();
        assertThat(read(literal, "22 c3 a0")).isNull();
    }

    private static Grammar.State read(Grammar g, String hex) {
        return g.start().advance(HexFormat.ofDelimiter(" ").parseHex(hex));
    }

    /** Tokens chosen, the mask before each, and their text. */
    private record Generation(List<Long> tokens, List<BitSet> masks, String text) {
    }

    private static Generation generate(Grammar grammar, Vocabulary v, Sampler sampler, Random model) {
        TokenConstraint c = new TokenConstraint(grammar, v);
        List<Long> tokens = new ArrayList<>();
        List<BitSet> masks = new ArrayList<>();
        for (int step = 0; step < 20_000 && !c.finished(); step++) {
            float[] logits = new float[v.size()];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (model.nextGaussian() * 3);
            }
            masks.add((BitSet) c.allowed().clone());
            c.mask(logits);
            long t = sampler.choose(logits, step).tokenId();
            tokens.add(t);
            c.accept(t);
        }
        assertThat(c.finished()).isTrue();
        return new Generation(tokens, masks, ConstrainedJsonTest.text(v, tokens));
    }

    /**
     * An end token, a special one, the 256 bytes, the texts of {@code pieces} whole, and {@code merges} random byte
     * ranges of the UTF-8 of {@code pieces} (cut anywhere, inside characters too).
     */
    private static Vocabulary vocabulary(List<String> pieces, Random r, int merges) {
        Set<String> seen = new LinkedHashSet<>();
        List<byte[]> tokens = new ArrayList<>();
        tokens.add(new byte[0]); // END
        tokens.add(new byte[0]); // a special token: never allowed
        for (int b = 0; b < 256; b++) {
            add(tokens, seen, new byte[]{(byte) b});
        }
        for (String p : pieces) {
            add(tokens, seen, p.getBytes(StandardCharsets.UTF_8));
        }
        for (int i = 0; i < merges; i++) {
            byte[] text = pieces.get(r.nextInt(pieces.size())).getBytes(StandardCharsets.UTF_8);
            int from = r.nextInt(text.length);
            int to = Math.min(text.length, from + 2 + r.nextInt(5));
            add(tokens, seen, Arrays.copyOfRange(text, from, to));
        }
        BitSet end = new BitSet();
        end.set(END);
        return new Vocabulary(tokens.toArray(new byte[0][]), end);
    }

    private static void add(List<byte[]> tokens, Set<String> seen, byte[] token) {
        if (seen.add(HexFormat.of().formatHex(token))) {
            tokens.add(token);
        }
    }

    private static long id(Vocabulary v, String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        for (int id = 0; id < v.size(); id++) {
            if (Arrays.equals(v.bytes(id), b)) {
                return id;
            }
        }
        throw new AssertionError("no token " + text);
    }

    private static boolean wellFormed(byte[] b) {
        return Arrays.equals(new String(b, StandardCharsets.UTF_8).getBytes(StandardCharsets.UTF_8), b);
    }

    private static String word(Random r) {
        StringBuilder b = new StringBuilder();
        for (int i = 1 + r.nextInt(4); i > 0; i--) {
            b.append(CHARS[r.nextInt(CHARS.length)]);
        }
        return b.toString();
    }

    private static String words(Random r, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(word(r));
        }
        return b.toString();
    }

    /** An object whose property names, enum values and consts are random words of non-ASCII characters. */
    private static ObjectNode nonAsciiSchema(Random r, int depth, boolean strict) {
        ObjectNode s = JSON.createObjectNode();
        int kind = depth == 0 ? 0 : r.nextInt(depth >= 2 ? 4 : 5);
        switch (kind) {
            case 0, 4 -> {
                s.put("type", "object");
                ObjectNode props = s.putObject("properties");
                ArrayNode required = s.putArray("required");
                for (int i = 1 + r.nextInt(3); i > 0; i--) {
                    String name = word(r);
                    if (!props.has(name)) {
                        props.set(name, nonAsciiSchema(r, depth + 1, strict));
                        if (strict || r.nextBoolean()) {
                            required.add(name);
                        }
                    }
                }
                if (strict || r.nextBoolean()) {
                    s.put("additionalProperties", false);
                }
            }
            case 1 -> {
                ArrayNode e = s.putArray("enum");
                for (int i = 1 + r.nextInt(4); i > 0; i--) {
                    e.add(word(r));
                }
            }
            case 2 -> s.putObject("const").put(word(r), word(r)).putArray(word(r)).add(word(r)).add(r.nextInt(9));
            default -> s.put("type", "string").put("maxLength", r.nextInt(5));
        }
        return s;
    }
}
