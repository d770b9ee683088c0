package io.butterfly.worker.config;

import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.worker.capability.CapabilityProbe;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.EngineThread;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.gateway.ExpertGateway;
import io.butterfly.worker.gateway.PeerChannels;
import io.butterfly.worker.gateway.RegistryGateway;
import io.butterfly.worker.gateway.StageGateway;
import io.butterfly.worker.partition.LoadPhase;
import io.butterfly.worker.partition.PartitionChecksums;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.partition.PartitionSettings;
import io.butterfly.common.verify.PrecisionContract;
import io.butterfly.worker.pipeline.IdleCacheEviction;
import io.butterfly.worker.pipeline.OutputCorruption;
import io.butterfly.worker.pipeline.PipelineStage;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import java.util.ArrayList;
import java.util.List;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The worker's parts, wired from its settings: the domain, and the gateways it reaches other services through. */
@Configuration(proxyBeanMethods = false)
public class WorkerConfiguration {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(WorkerConfiguration.class);

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }

    @Bean
    PeerChannels peerChannels(PeerChannels.Opener opener) {
        return new PeerChannels(opener);
    }

    /** Starts measuring as the context starts (see {@link CapabilityProbe}). */
    @Bean
    CapabilityProbe capabilityProbe(WorkerProperties props) {
        return new CapabilityProbe(props.device(), props.threads(), props.dataDir(), props.memoryLimit().toBytes(),
                props.weightDtype().bytes());
    }

    @Bean
    CoordinatorGateway coordinatorGateway(WorkerProperties props, WorkerRetryProperties retry, PeerChannels channels) {
        Endpoint startup = props.coordinatorPort() > 0
                ? new Endpoint("coordinator", props.coordinatorHost(), props.coordinatorPort()) : null;
        List<Endpoint> others = new ArrayList<>();
        for (String replica : props.coordinatorReplicas()) {
            int colon = replica.lastIndexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException("butterfly.worker.coordinator-replicas: host:port, got '" + replica + "'");
            }
            others.add(new Endpoint("coordinator-replica", replica.substring(0, colon),
                    Integer.parseInt(replica.substring(colon + 1))));
        }
        CoordinatorGateway coordinators = new CoordinatorGateway(props.nodeId(), props.heartbeatMillis(), startup, others,
                channels, retry.report());
        coordinators.startHeartbeats();
        return coordinators;
    }

    @Bean
    RegistryGateway registryGateway(RegistryClientProperties registry, WorkerRetryProperties retry, PeerChannels channels) {
        return new RegistryGateway(channels, registry.breakerFailuresToOpen(), registry.breakerOpenFor(),
                registry.parallelFiles(), registry.compression(), registry.sharedStore(), retry.download());
    }

    @Bean
    StageGateway stageGateway(WorkerProperties props, PeerChannels channels, CoordinatorGateway coordinators) {
        return new StageGateway(channels, coordinators, props.nodeId());
    }

    @Bean
    DiscoveryGateway discoveryGateway(WorkerProperties props, WorkerRetryProperties retry, PeerChannels channels,
                                      CapabilityProbe capabilities,
                                      @Value("${spring.grpc.server.port}") int grpcPort,
                                      @Value("${server.port}") int httpPort) {
        return new DiscoveryGateway(channels.get(props.discoveryHost(), props.discoveryPort()), props.dataDir(),
                props.clusterName(), props.discoveryHeartbeatMillis(),
                new DiscoveryGateway.Self(props.nodeId(), props.advertiseHost(), grpcPort, httpPort), capabilities::await,
                retry.join());
    }

    /**
     * The one thread this worker's partitions load and compute on, and its steps run on ({@link EngineThread}): this
     * worker's own, so the workers of an in-process cluster compute apart as processes do; it ends with the context,
     * after the partition manager and the stage that use it.
     */
    @Bean
    EngineThread engineThread() {
        return EngineThread.named("engine");
    }

    @Bean
    PartitionManager partitionManager(WorkerProperties props, RegistryGateway registry, CoordinatorGateway coordinators,
                                      PeerChannels channels, EngineThread engineThread) {
        PartitionSettings settings = new PartitionSettings(props.nodeId(), props.dataDir(), props.trustedPublisherKeys(),
                new ExecutorOptions(props.device(), props.threads(), props.kvCacheBudget().toBytes(), props.batchInvariant(),
                        props.weightDtype()).withKernels(props.kernels()).withActivations(props.activations())
                        .withExperts(new ExpertGateway(channels)).withPrefixCaching(props.prefixCaching())
                        .withEngineThread(engineThread));
        PartitionManager manager = new PartitionManager(settings, registry, coordinators);
        manager.askHeadsThrough(new io.butterfly.worker.gateway.HeadGateway(channels));
        coordinators.prefixCacheFrom(() -> {
            io.butterfly.worker.engine.PartitionExecutor executor = manager.loadedExecutor();
            return executor == null ? io.butterfly.worker.engine.PrefixCacheStats.OFF : executor.prefixCacheStats();
        });
        return manager;
    }

    @Bean
    PrefixCacheMetrics prefixCacheMetrics(PartitionManager partitions) {
        return new PrefixCacheMetrics(partitions);
    }

    @Bean
    PartitionChecksums partitionChecksums(PartitionManager partitions, UnsafeFaultInjectionProperties faults) {
        boolean misreport = faults.enabled() && faults.misreportChecksums();
        if (misreport) {
            LOG.warn("FAULT INJECTION: this worker reports another digest for the first file it loads on purpose"
                    + " (butterfly.worker.unsafe-fault-injection.misreport-checksums); never serve with it");
        }
        return new PartitionChecksums(partitions, misreport);
    }

    @Bean
    PipelineStage pipelineStage(WorkerProperties props, UnsafeFaultInjectionProperties faults, PartitionManager partitions,
                                StageGateway nextStages, CoordinatorGateway coordinators, Tracer tracer,
                                Propagator propagator, EngineThread engineThread) {
        OutputCorruption corruption = OutputCorruption.NONE;
        if (faults.enabled() && faults.flipBitFraction() > 0) {
            LOG.warn("FAULT INJECTION: this worker flips one bit in {} of its step outputs on purpose"
                    + " (butterfly.worker.unsafe-fault-injection); never serve with it", faults.flipBitFraction());
            corruption = new OutputCorruption(faults.flipBitFraction(), faults.seed(), faults.flipBitLayer());
        }
        return new PipelineStage(partitions, nextStages, coordinators, new MicrometerStepTracing(tracer, propagator),
                props.nodeId(), contract(props), corruption, engineThread);
    }

    /** What this worker computes under: the same on every worker of a cluster (docs/verified-execution.md). */
    static PrecisionContract contract(WorkerProperties props) {
        return new PrecisionContract(props.weightDtype().name(), "FLOAT32", props.activations().name());
    }

    @Bean
    IdleCacheEviction idleCacheEviction(WorkerProperties props, PartitionManager partitions) {
        return new IdleCacheEviction(partitions, props.cacheIdleTimeout());
    }

    /** Readiness of a worker = its partition is loaded and verified (docs/architecture.md). */
    @Bean
    HealthIndicator partitionHealthIndicator(PartitionManager partitions) {
        return () -> {
            var s = partitions.status();
            Health.Builder h = s.phase() == LoadPhase.READY ? Health.up() : Health.outOfService();
            h.withDetail("phase", s.phase().name());
            if (s.error() != null) {
                h.withDetail("error", s.error());
            }
            return h.build();
        };
    }
}
