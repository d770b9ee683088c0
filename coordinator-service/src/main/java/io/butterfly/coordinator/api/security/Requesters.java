package io.butterfly.coordinator.api.security;

import io.butterfly.common.web.auth.ApiKeyPrincipal;
import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.coordinator.inference.Requester;

/** The requester of the request this thread serves, by the API key Spring Security authenticated it with. */
public final class Requesters {

    private Requesters() {
    }

    /** The current request's key as a {@link Requester}; anonymous without one. */
    public static Requester current() {
        ApiKeyPrincipal key = ApiKeySecurity.currentKey();
        return key == null ? Requester.ANONYMOUS : new Requester(key.keyId(), key.admin());
    }
}
