package io.butterfly.discovery.admission;

/** One admission rule; throws {@link io.butterfly.discovery.membership.AdmissionException} to refuse. */
public interface AdmissionCheck {

    void check(JoinAttempt attempt);
}
