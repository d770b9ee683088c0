package io.butterfly.worker.partition;

/** Time left of a load, extrapolated from the transfer rate so far (docs/bootstrap-protocol.md §6.4). */
final class LoadEta {

    private LoadEta() {
    }

    /** The share of the bytes that must be there before a rate is extrapolated. */
    static final double MIN_SHARE = 0.01;

    /**
     * @return estimated seconds until every byte is fetched: elapsed × remaining / done; -1 while less than
     *         {@value #MIN_SHARE} of the bytes are there (the first small file after the set-up time made
     *         estimates of hours for loads that took a second), 0 when all bytes are there
     */
    static double seconds(long bytesDone, long bytesTotal, long elapsedNanos) {
        if (bytesTotal > 0 && bytesDone >= bytesTotal) {
            return 0;
        }
        if (bytesDone <= 0 || elapsedNanos <= 0 || bytesDone < MIN_SHARE * bytesTotal) {
            return -1;
        }
        return elapsedNanos / 1e9 * (bytesTotal - bytesDone) / bytesDone;
    }
}
