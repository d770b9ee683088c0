package io.butterfly.common.manifest;

/**
 * Progress of fetching a manifest's files: verified bytes on disk so far out of the total size of all files asked,
 * and the file that just advanced. Called from the fetching threads, one call at a time.
 */
@FunctionalInterface
public interface FetchProgress {

    void onProgress(String file, long bytesDone, long bytesTotal);
}
