package io.butterfly.worker.partition;

import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.FetchProgress;
import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.worker.cluster.Endpoint;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/** Where a partition's files come from: the model registry an assignment names. */
public interface ShardSource {

    /** A fetch of one load's files from the registry at {@code registry}. */
    Fetch from(Endpoint registry);

    /** One load's manifest and files; failures are ButterflyExceptions with the registry's code. */
    interface Fetch {

        /** The registry's manifest of {@code modelId}; its signature is the caller's to check. */
        Manifest manifest(String modelId);

        /**
         * The files of {@code manifest} named, in that order, each verified against the manifest: fetched into
         * {@code dir}, or found there or in the shared store.
         */
        List<VerifiedFile> download(Manifest manifest, List<String> files, Path dir, FetchProgress progress)
                throws IOException;

        /** Bytes streamed from the registry so far. */
        long bytesStreamed();

        /** Bytes verified in place in the registry's shared store so far. */
        long bytesVerifiedInPlace();
    }
}
