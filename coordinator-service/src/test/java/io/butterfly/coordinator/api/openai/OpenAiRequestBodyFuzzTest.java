package io.butterfly.coordinator.api.openai;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.butterfly.coordinator.api.rest.RequestBodies;
import io.butterfly.coordinator.chat.ChatPrompt;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.sampling.ChoiceSeeds;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.tools.Tools;
import java.io.IOException;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * The JSON bodies of {@code POST /v1/completions} and {@code /v1/chat/completions} (docs/testing.md, fuzzing), bound
 * and validated as the coordinator does it before any work, without Spring MVC in the way: the message converter's
 * {@code JsonMapper} (strict request JSON, the parser's limits) binds the bytes, then the steps of
 * {@link CompletionsController#complete} and {@link ChatCompletionsController#chat} up to queuing, in their order (the
 * prompts and their count, the model's name, the conversation and its bound, the tools, the chat template's render and
 * its bounds, every choice's generation validated and tokenized by {@link InferenceService#prepare}), over a READY
 * cluster of the tiny model with its ChatML template. Any body is admitted, or refused as the problem handlers answer
 * with 4xx naming the field; nothing else escapes (it would be a 500). The end-to-end target over a real Tomcat with
 * the key filters and OpenAI's error object is {@code ServletRequestBodyFuzzTest}.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(30)
class OpenAiRequestBodyFuzzTest {

    private static final long SEED = 47;
    private static RequestBodies bodies;

    @BeforeAll
    static void start() throws IOException {
        bodies = new RequestBodies();
    }

    @AfterAll
    static void stop() {
        bodies.close();
    }

    @FuzzTest(maxDuration = "30s")
    void anyCompletionBodyIsAdmittedOrRefused(byte[] body) {
        try {
            CompletionRequest bound = bodies.mapper().readValue(body, CompletionRequest.class);
            if (bound == null) {
                return; // the JSON null: Spring MVC answers 400, a required body is missing
            }
            InferenceService inference = bodies.inference();
            List<CompletionRequest.Prompt> prompts = bound.prompts();
            CompletionsController.requireServed(bound.model(), inference.servedModel());
            int perPrompt = bound.streaming() ? bound.choices() : bound.candidates();
            for (CompletionRequest.Prompt prompt : prompts) {
                for (int i = 0; i < perPrompt; i++) {
                    admitted(inference.prepare(bound.generation(prompt, SEED, i), null, Requester.ANONYMOUS));
                }
            }
        } catch (RuntimeException refused) {
            RequestBodies.assertAnswered4xx(refused);
        }
    }

    @FuzzTest(maxDuration = "30s")
    void anyChatBodyIsAdmittedOrRefused(byte[] body) {
        try {
            ChatCompletionRequest bound = bodies.mapper().readValue(body, ChatCompletionRequest.class);
            if (bound == null) {
                return; // the JSON null: Spring MVC answers 400, a required body is missing
            }
            InferenceService inference = bodies.inference();
            List<ChatTemplate.Message> conversation = bound.conversation(bodies.props().maxChatMessages());
            ServedModel served = inference.servedModel();
            CompletionsController.requireServed(bound.model(), served);
            Tools tools = bound.readTools();
            long[] prompt = ChatPrompt.tokens(served, conversation, tools.forTemplate(), bodies.props().maxPromptChars());
            GenerationRequest request = bound.generation(prompt, ChatPrompt.defaultMaxTokens(prompt.length,
                    bodies.props().maxNewTokens(), served.config().maxPositions()), SEED, tools);
            for (int i = 0; i < bound.choices(); i++) {
                GenerationRequest choice = ChatCompletionRequest.withSeed(request, ChoiceSeeds.of(request.seed(), i));
                admitted(inference.prepare(choice, null, Requester.ANONYMOUS));
            }
        } catch (RuntimeException refused) {
            RequestBodies.assertAnswered4xx(refused);
        }
    }

    private static void admitted(InferenceService.Prepared prepared) {
        assertThat(prepared.handle().promptTokenIds()).isNotEmpty();
    }
}
