package io.butterfly.worker.partition;

/** Time left of a load, extrapolated from the transfer rate so far (bootstrap-protocol.md §6.4). */
final class LoadEta {

    private LoadEta() {
    }

    /**
     * @return estimated seconds until every byte is fetched: elapsed × remaining / done; -1 when nothing
     *         was transferred yet (no rate to extrapolate), 0 when all bytes are there
     */
    static double seconds(long bytesDone, long bytesTotal, long elapsedNanos) {
        if (bytesTotal > 0 && bytesDone >= bytesTotal) {
            return 0;
        }
        if (bytesDone <= 0 || elapsedNanos <= 0) {
            return -1;
        }
        return elapsedNanos / 1e9 * (bytesTotal - bytesDone) / bytesDone;
    }
}
