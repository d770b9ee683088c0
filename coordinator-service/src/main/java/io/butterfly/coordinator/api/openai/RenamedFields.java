package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.inference.InvalidRequestException;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Refusals of the inference named after the OpenAI request's fields: the inference names its own ({@code token_ids},
 * {@code prompt}, {@code max_tokens}), which reach it under other names here (a completion's token ids in
 * {@code prompt}, a chat's prompt in {@code messages}).
 */
final class RenamedFields {

    private RenamedFields() {
    }

    /** {@code call}'s result; a refusal it throws renamed by {@code rename} (the message says the new name too). */
    static <T> T renamed(UnaryOperator<String> rename, Supplier<T> call) {
        try {
            return call.get();
        } catch (InvalidRequestException e) {
            String field = rename.apply(e.field());
            if (field.equals(e.field())) {
                throw e;
            }
            // The name as the message says it: without the index a renamed field keeps ("token_ids[3]" is in
            // "prompt[1][3]"; the message says token_ids, now prompt[1]).
            String old = e.field().contains("[") ? e.field().substring(0, e.field().indexOf('[')) : e.field();
            String suffix = e.field().substring(old.length());
            String now = field.endsWith(suffix) ? field.substring(0, field.length() - suffix.length()) : field;
            InvalidRequestException renamed = new InvalidRequestException(field, e.getMessage().replace(old, now),
                    e.tooLarge());
            renamed.initCause(e);
            throw renamed;
        }
    }
}
