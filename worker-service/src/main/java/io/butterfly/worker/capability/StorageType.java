package io.butterfly.worker.capability;

/**
 * Kind of storage behind a data directory. The names are the wire's, and those discovery's Consul backend reads
 * back from the registration's metadata.
 */
public enum StorageType {
    STORAGE_TYPE_UNSPECIFIED,
    HDD,
    SSD,
    NVME
}
