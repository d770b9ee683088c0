package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiChatCompletion;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * OpenAI's chat {@code logprobs} object: {@code content}, per token its text ({@link TokenTexts}), log-probability,
 * UTF-8 bytes and the step's most likely tokens, most likely first. A token's {@code bytes} are those of its text, or
 * null where the token ends inside a character (its text is then U+FFFD, not the token's own bytes). One per choice,
 * fed the tokens in order; not thread-safe.
 */
final class ChatLogprobs {

    private final TokenTexts texts;

    ChatLogprobs(Function<long[], String> decoder, List<Long> promptTail) {
        this.texts = new TokenTexts(decoder, promptTail);
    }

    /** The object for these tokens, which follow those given before. */
    OpenAiChatCompletion.Logprobs next(List<Long> ids, List<Double> logprobs, List<List<TokenLogprob>> top) {
        List<OpenAiChatCompletion.Token> content = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String before = texts.before();
            List<OpenAiChatCompletion.Token> alternatives = new ArrayList<>(top.get(i).size());
            for (TokenLogprob t : top.get(i)) {
                alternatives.add(token(texts.added(before, t.tokenId()), t.logprob(), null));
            }
            content.add(token(texts.added(before, ids.get(i)), logprobs.get(i), alternatives));
            texts.push(ids.get(i));
        }
        return new OpenAiChatCompletion.Logprobs(content, null);
    }

    /** A token; an alternative has no alternatives of its own ({@code top} null: the field is absent). */
    private static OpenAiChatCompletion.Token token(String text, double logprob, List<OpenAiChatCompletion.Token> top) {
        return new OpenAiChatCompletion.Token(text, logprob, bytes(text), top);
    }

    private static List<Integer> bytes(String text) {
        if (text.indexOf('\uFFFD') >= 0) {
            return null;
        }
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        List<Integer> out = new ArrayList<>(utf8.length);
        for (byte b : utf8) {
            out.add(b & 0xFF);
        }
        return out;
    }
}
