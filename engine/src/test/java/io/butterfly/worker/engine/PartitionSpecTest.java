package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import org.junit.jupiter.api.Test;

class PartitionSpecTest {

    private final ModelConfig config = ModelFixtures.llamaGqa();

    @Test
    void acceptsContiguousStagesAndEdgeStagesWithoutLayers() {
        assertThat(PartitionSpec.whole(config).numLayers()).isEqualTo(4);
        assertThat(new PartitionSpec(config, 1, 3, false, false).numLayers()).isEqualTo(2);
        assertThat(new PartitionSpec(config, 0, 0, true, false).numLayers()).isZero();
        assertThat(new PartitionSpec(config, 4, 4, false, true).numLayers()).isZero();
    }

    @Test
    void refusesRangesOutsideTheModelAndMisplacedEnds() {
        assertThatThrownBy(() -> new PartitionSpec(config, 2, 5, false, false)).hasMessageContaining("4 layers");
        assertThatThrownBy(() -> new PartitionSpec(config, 3, 2, false, false)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PartitionSpec(config, -1, 2, false, false)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new PartitionSpec(config, 1, 4, true, true)).hasMessageContaining("embedding");
        assertThatThrownBy(() -> new PartitionSpec(config, 0, 3, true, true)).hasMessageContaining("LM head");
        assertThatThrownBy(() -> new PartitionSpec(config, 2, 2, false, false)).hasMessageContaining("nothing");
    }

    @Test
    void chunksNeedTokensAndANonNegativePosition() {
        assertThatThrownBy(() -> new SequenceChunk("s", 0, 0)).hasMessageContaining("'s'");
        assertThatThrownBy(() -> new SequenceChunk("s", -1, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new ExecutorOptions("cpu", -1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(new ExecutorOptions(null, 0).device()).isEqualTo("auto");
    }
}
