package io.butterfly.coordinator.config;

import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.planning.PlannerKind;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

/**
 * Partition planning settings, under the coordinator's prefix so the planner is chosen with
 * {@code butterfly.coordinator.planner}. Kept apart from {@link CoordinatorProperties}.
 *
 * @param planner  {@code capacity-weighted} (docs/initialization-and-bootstrap.md §4.2) or {@code optimal} (dynamic programming, §5.2)
 * @param planning how the memory need of a stage is estimated
 */
@ConfigurationProperties("butterfly.coordinator")
public record PlanningProperties(
        @DefaultValue("capacity-weighted") PlannerKind planner,
        @DefaultValue Planning planning) {

    /**
     * @param kvCacheTokens      tokens of KV cache reserved per layer (0 = the model's maximum positions)
     * @param kvCacheSequences   sequences held at once (the KV cache is per sequence)
     * @param activationHeadroom memory each stage needs beyond weights and KV cache (activations, scratch)
     * @param kvCacheBudget      with kv-cache-tokens 0, one sequence's KV cache over all layers is counted at most
     *                           at this (the workers' default butterfly.worker.kv-cache-budget; 0B: no cap)
     * @param expertGroups       workers a mixture of experts' stage spreads its routed experts over, one expert group
     *                           each (docs/sharding.md); 1: every stage holds all of its experts; 0: as few as the
     *                           workers' memory allows
     * @param headShards         workers a dense Llama-family model's stage splits its layers over by attention heads,
     *                           one head shard each (docs/sharding.md, "Head parallelism"); 1: layers whole
     */
    public record Planning(
            @DefaultValue("0") int kvCacheTokens,
            @DefaultValue("1") int kvCacheSequences,
            @DefaultValue("64MB") DataSize activationHeadroom,
            @DefaultValue("2GB") DataSize kvCacheBudget,
            @DefaultValue("1") int expertGroups,
            @DefaultValue("1") int pipelines,
            @DefaultValue("0") int spares,
            @DefaultValue("1") int headShards) {

        public ModelFootprints.Settings footprint() {
            return new ModelFootprints.Settings(kvCacheTokens, kvCacheSequences, activationHeadroom.toBytes(),
                    kvCacheBudget.toBytes());
        }
    }
}
