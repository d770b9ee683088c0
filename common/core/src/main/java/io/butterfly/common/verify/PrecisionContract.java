package io.butterfly.common.verify;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.Objects;

/**
 * The math a stage computes its layers with (docs/verified-execution.md, the spec's {@code precision_contract}): the
 * format its projection weights are held in ({@code F32}, {@code F16}, {@code BF16}), the dtype it computes and hands on
 * activations in ({@code FLOAT32}), and what quantized projections multiply ({@code INT8} or {@code F32}). Every stage
 * of a pipeline has the same one: hidden states computed under another contract are other numbers, and their hashes
 * could never equal a replay's or an audit's.
 */
public record PrecisionContract(String weightFormat, String computeDtype, String activations) {

    public PrecisionContract {
        Objects.requireNonNull(weightFormat, "weightFormat");
        Objects.requireNonNull(computeDtype, "computeDtype");
        Objects.requireNonNull(activations, "activations");
    }

    /**
     * Refuses input computed under {@code sender}'s contract when it is not this one: CONTRACT_MISMATCH,
     * INVALID_ARGUMENT (sent again unchanged it fails again, so the step is not retried: the cluster's configuration
     * must change).
     *
     * @param from who computed the input (for the message)
     */
    public void requireSame(PrecisionContract sender, String from) {
        if (sender == null) {
            throw new ButterflyException(ErrorCode.CONTRACT_MISMATCH, ErrorKind.INVALID_ARGUMENT,
                    "hidden states from " + from + " carry no precision contract; this stage computes under " + this);
        }
        if (!equals(sender)) {
            throw new ButterflyException(ErrorCode.CONTRACT_MISMATCH, ErrorKind.INVALID_ARGUMENT,
                    "hidden states from " + from + " were computed under " + sender + " but this stage computes under "
                            + this + ": every worker of a cluster needs the same butterfly.worker.weight-dtype and"
                            + " butterfly.worker.activations");
        }
    }

    @Override
    public String toString() {
        return "weights " + weightFormat + ", compute " + computeDtype + ", activations " + activations;
    }
}
