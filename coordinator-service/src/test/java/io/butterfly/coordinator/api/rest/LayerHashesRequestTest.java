package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.web.auth.ApiKeyPrincipal;
import io.butterfly.common.web.auth.ApiKeys;
import io.butterfly.coordinator.inference.InvalidRequestException;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.security.core.authority.AuthorityUtils;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.web.authentication.preauth.PreAuthenticatedAuthenticationToken;
import org.springframework.web.server.ResponseStatusException;

/**
 * {@code layer_hashes} on the inference API (docs/verified-execution.md#per-layer-snapshot-hashes): refused to a
 * non-admin key with 403, with an Idempotency-Key and on the stream with 400 naming the field, before anything runs
 * (the controller here has no inference service: a request that got through would fail otherwise).
 */
class LayerHashesRequestTest {

    private final InferenceController controller = new InferenceController(null, null);

    @AfterEach
    void noKey() {
        SecurityContextHolder.clearContext();
    }

    @Test
    void aKeyThatIsNotAnAdminsIsRefusedWith403() {
        as(ApiKeys.Role.USER);
        assertThatThrownBy(() -> controller.infer(body(true), null))
                .isInstanceOfSatisfying(ResponseStatusException.class, e -> {
                    org.assertj.core.api.Assertions.assertThat(e.getStatusCode().value()).isEqualTo(403);
                    org.assertj.core.api.Assertions.assertThat(e.getReason()).contains("layer_hashes", "admin");
                });
    }

    @Test
    void withAnIdempotencyKeyOrOnTheStreamItIsRefusedNamingTheField() {
        as(ApiKeys.Role.ADMIN);
        assertThatThrownBy(() -> controller.infer(body(true), "key-1"))
                .isInstanceOfSatisfying(InvalidRequestException.class,
                        e -> org.assertj.core.api.Assertions.assertThat(e.field()).isEqualTo("layer_hashes"));
        SecurityContextHolder.clearContext(); // no keys set: anyone may ask, but not on the stream
        assertThatThrownBy(() -> controller.stream(body(true), null))
                .isInstanceOfSatisfying(InvalidRequestException.class,
                        e -> org.assertj.core.api.Assertions.assertThat(e.field()).isEqualTo("layer_hashes"));
    }

    private static void as(ApiKeys.Role role) {
        SecurityContextHolder.getContext().setAuthentication(new PreAuthenticatedAuthenticationToken(
                new ApiKeyPrincipal("k-" + role, role), null, AuthorityUtils.createAuthorityList("ROLE_" + role)));
    }

    private static InferenceController.Body body(boolean layerHashes) {
        return new InferenceController.Body(null, List.of(1L, 2L, 3L), 4, 0.0, null, null, null, null, null, null, null,
                layerHashes);
    }
}
