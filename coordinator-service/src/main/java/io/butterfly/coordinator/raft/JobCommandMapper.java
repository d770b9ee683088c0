package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.proto.coordinator.v1.ControlCommand;
import io.butterfly.proto.coordinator.v1.JobDefinedCommand;

/**
 * Log encoding of the batch-job commands (docs/jobs.md); kept apart from {@link ControlCommandMapper}, which delegates
 * here. The job's definition time is the command's.
 */
final class JobCommandMapper {

    private JobCommandMapper() {
    }

    /** Sets the command on {@code b}; false if {@code command} is not a job command. */
    static boolean toProto(ClusterCommand command, ControlCommand.Builder b) {
        if (command instanceof ClusterCommand.JobDefined c) {
            JobRecord j = c.job();
            b.setJobDefined(JobDefinedCommand.newBuilder().setJobId(j.id()).setDatasetSha256(j.datasetSha256())
                    .setSamples(j.samples()).setBatchSize(j.batchSize()).setSeed(j.seed()).setMaxTokens(j.maxTokens())
                    .setTemperature(j.temperature()).setTopP(j.topP()).setTopK(j.topK()));
            return true;
        }
        return false;
    }

    /** The job command in {@code proto}, or null if it holds another command. */
    static ClusterCommand fromProto(ControlCommand proto) {
        if (!proto.hasJobDefined()) {
            return null;
        }
        JobDefinedCommand c = proto.getJobDefined();
        long at = proto.getAtMs();
        return new ClusterCommand.JobDefined(new JobRecord(c.getJobId(), c.getDatasetSha256(), c.getSamples(),
                c.getBatchSize(), c.getSeed(), c.getMaxTokens(), c.getTemperature(), c.getTopP(), c.getTopK(), at), at);
    }
}
