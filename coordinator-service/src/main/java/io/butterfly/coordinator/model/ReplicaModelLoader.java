package io.butterfly.coordinator.model;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.coordinator.control.ControlLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Every coordinator replica serves inference, not only the leader: once the replicated state names the model
 * (ModelResolved committed by the leader), a replica that has not fetched it yet fetches and verifies the same
 * manifest (same Merkle root) and its tokenizer. The leader has usually fetched it already during bootstrap.
 * It keeps watching: a later publication (another Merkle root) is fetched the same way. Until then the
 * replica is not ready (its readiness probe) and a request it is sent fetches the model itself.
 */
public class ReplicaModelLoader implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ReplicaModelLoader.class);

    private final ControlLog control;
    private final ModelCatalog catalog;
    private volatile Thread thread;

    public ReplicaModelLoader(ControlLog control, ModelCatalog catalog) {
        this.control = control;
        this.catalog = catalog;
    }

    public void start() {
        thread = DaemonThreads.start("replica-model-loader", this::run);
    }

    private void run() {
        try {
            while (true) {
                String merkleRoot = control.state().merkleRoot();
                if (merkleRoot != null && !catalog.holds(merkleRoot)) {
                    load(merkleRoot);
                }
                Thread.sleep(1000);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void load(String merkleRoot) {
        try {
            ServedModel model = catalog.servedFor(merkleRoot);
            log.info("replica loaded model {} for serving (merkle root {})", model.manifest().modelId(), merkleRoot);
        } catch (RuntimeException e) {
            log.info("replica could not load the served model yet: {}", e.getMessage());
        }
    }

    @Override
    public void close() {
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }
}
