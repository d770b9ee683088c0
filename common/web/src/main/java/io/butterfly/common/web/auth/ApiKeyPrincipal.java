package io.butterfly.common.web.auth;

/**
 * Who a request with a valid API key is: the key's id and role. The id is the first 64 bits of the key's SHA-256
 * digest, in hex: the same on every replica that holds the key, naming the key without being it (what a task's
 * owner is recorded as), and never logged with the key.
 */
public record ApiKeyPrincipal(String keyId, ApiKeys.Role role) {

    public boolean admin() {
        return role == ApiKeys.Role.ADMIN;
    }

    @Override
    public String toString() {
        return role.name().toLowerCase() + " key " + keyId;
    }
}
