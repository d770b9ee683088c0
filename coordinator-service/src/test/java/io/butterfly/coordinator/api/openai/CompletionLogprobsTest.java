package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiCompletion;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Logprob tokens read as they do in the completion's text, with a SentencePiece-style decoder: a word's piece
 * carries its leading space ("▁"), which the decoder drops at the start of what it decodes, so a token decoded
 * alone would lose it.
 */
class CompletionLogprobsTest {

    /** id 0 is a special token (left out of text); the rest are pieces. */
    private static final String[] PIECES = {"<s>", "▁The", "▁butter", "fly", "▁effect"};

    private static String decode(long[] ids) {
        String joined = Arrays.stream(ids).filter(id -> id != 0).mapToObj(id -> PIECES[(int) id])
                .collect(Collectors.joining()).replace('▁', ' ');
        return joined.startsWith(" ") ? joined.substring(1) : joined;
    }

    @Test
    void tokensKeepTheirLeadingSpacesAndJoinToTheText() {
        CompletionLogprobs logprobs = new CompletionLogprobs(CompletionLogprobsTest::decode, List.of(0L, 1L));
        OpenAiCompletion.Logprobs first = logprobs.next(List.of(2L, 3L), List.of(-1.0, -0.1),
                List.of(List.of(new TokenLogprob(4, -0.5), new TokenLogprob(2, -1.0)), List.of(new TokenLogprob(3, -0.1))));
        OpenAiCompletion.Logprobs second = logprobs.next(List.of(4L), List.of(-0.2), List.of(List.of()));

        assertThat(first.tokens()).isEqualTo(List.of(" butter", "fly"));
        assertThat(second.tokens()).isEqualTo(List.of(" effect"));
        // the texts join to what the tokens add to the prompt's text
        assertThat(" butter" + "fly" + " effect").isEqualTo(
                decode(new long[]{0, 1, 2, 3, 4}).substring(decode(new long[]{0, 1}).length()));
        assertThat(first.textOffset()).isEqualTo(List.of(0, 7));
        assertThat(second.textOffset()).isEqualTo(List.of(10)); // offsets run on across calls (a stream)
        assertThat(first.topLogprobs()).isEqualTo(List.of(Map.of(" effect", -0.5, " butter", -1.0),
                Map.of("fly", -0.1)));
        assertThat(second.topLogprobs()).isEqualTo(List.of(Map.of(" effect", -0.2))); // the chosen one, always
        assertThat(first.tokenLogprobs()).isEqualTo(List.of(-1.0, -0.1));
    }

    @Test
    void theFirstTokenAfterTheStartOfTextReadsAsTheTextBegins() {
        CompletionLogprobs logprobs = new CompletionLogprobs(CompletionLogprobsTest::decode, List.of(0L));
        assertThat(logprobs.next(List.of(1L), List.of(-0.3), List.of(List.of())).tokens())
                .isEqualTo(List.of(decode(new long[]{0, 1}))); // "The", as the completion's text starts
    }
}
