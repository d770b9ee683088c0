package io.butterfly.common.retry;

import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.RetrySettings;
import io.github.resilience4j.core.IntervalBiFunction;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * The one way a Butterfly service retries a call: Resilience4j's {@link Retry}, waiting by {@link Backoff}. Which
 * failures are retried stays with the caller; the loop, the waits, the interruption (the wait ends, the interrupt flag
 * is set and the last failure is thrown) and the retry events are Resilience4j's. Two forms:
 * <ul>
 *   <li>{@link #onFailure}: a fixed number of tries, retried on the failures a predicate accepts;</li>
 *   <li>{@link #untilDone}: a call whose own rules decide each retry and its wait (separate budgets, a wait the
 *       server suggests), which it asks for by throwing {@link TryAgain}.</li>
 * </ul>
 */
public final class Retries {

    private Retries() {
    }

    /**
     * Retries a call that fails by throwing: up to {@code settings.maxAttempts()} tries (0: until it succeeds or fails
     * in a way {@code retryOn} refuses), waiting {@code backoff.millis(n)} before retry {@code n} (0: the first). Once
     * the tries are spent, the last failure is thrown.
     */
    public static Retry onFailure(String name, RetrySettings settings, Backoff.Jitter jitter, Predicate<Throwable> retryOn) {
        Backoff backoff = settings.backoff(jitter);
        return of(name, settings.maxAttempts(), (attempts, outcome) -> backoff.millis(attempts - 1), retryOn);
    }

    private static <T> Retry of(String name, int maxAttempts, IntervalBiFunction<T> waits, Predicate<Throwable> retryOn) {
        RetryConfig config = RetryConfig.<T>custom()
                .maxAttempts(maxAttempts == 0 ? Integer.MAX_VALUE : maxAttempts)
                .intervalBiFunction(waits)
                .retryOnException(retryOn)
                .build();
        return Retry.of(name, config);
    }

    /** One try of {@link #untilDone}. */
    @FunctionalInterface
    public interface Attempt<T, E extends Exception> {
        T get() throws E;
    }

    /**
     * Thrown by a try that is to be tried again after {@code waitMillis}; {@code failure} is what the caller is
     * thrown if the wait is interrupted.
     */
    public static final class TryAgain extends RuntimeException {
        private final RuntimeException failure;
        private final long waitMillis;

        public TryAgain(RuntimeException failure, long waitMillis) {
            super(failure.getMessage(), failure, false, false);
            this.failure = Objects.requireNonNull(failure, "failure");
            if (waitMillis < 0) {
                throw new IllegalArgumentException("a wait is not negative: " + waitMillis);
            }
            this.waitMillis = waitMillis;
        }

        public RuntimeException failure() {
            return failure;
        }

        public long waitMillis() {
            return waitMillis;
        }
    }

    /**
     * Tries {@code attempt} until it returns or throws anything but {@link TryAgain}, which it throws to be tried
     * again after the wait it names. Interrupted while waiting, the interrupt flag is set and that {@code TryAgain}'s
     * failure is thrown.
     */
    @SuppressWarnings("unchecked")
    public static <T, E extends Exception> T untilDone(String name, Attempt<T, E> attempt) throws E {
        Retry retry = of(name, 0, (attempts, outcome) -> ((TryAgain) outcome.getLeft()).waitMillis(),
                e -> e instanceof TryAgain);
        try {
            return retry.executeCheckedSupplier(attempt::get);
        } catch (TryAgain interrupted) {
            throw interrupted.failure();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw (E) e; // only what attempt throws: E
        }
    }
}
