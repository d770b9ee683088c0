package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobRecord;
import com.google.protobuf.ByteString;
import io.butterfly.proto.coordinator.v1.ControlCommand;
import io.butterfly.proto.coordinator.v1.JobBatchLeasedCommand;
import io.butterfly.proto.coordinator.v1.JobDefinedCommand;
import io.butterfly.proto.coordinator.v1.JobResultRecordedCommand;

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
                    .setTemperature(j.temperature()).setTopP(j.topP()).setTopK(j.topK())
                    .setMaxResultBytes(j.maxResultBytes()));
            return true;
        } else if (command instanceof ClusterCommand.JobBatchLeased c) {
            b.setJobBatchLeased(JobBatchLeasedCommand.newBuilder().setJobId(c.jobId()).setStep(c.step())
                    .setPosition(c.position()).setHolder(c.holder()).setLeaseMs(c.leaseMs()));
            return true;
        } else if (command instanceof ClusterCommand.JobResultRecorded c) {
            b.setJobResultRecorded(JobResultRecordedCommand.newBuilder().setJobId(c.jobId()).setStep(c.step())
                    .setPosition(c.position()).setData(ByteString.copyFrom(c.data())));
            return true;
        }
        return false;
    }

    /** The job command in {@code proto}, or null if it holds another command. */
    static ClusterCommand fromProto(ControlCommand proto) {
        long at = proto.getAtMs();
        if (proto.hasJobBatchLeased()) {
            JobBatchLeasedCommand c = proto.getJobBatchLeased();
            return new ClusterCommand.JobBatchLeased(c.getJobId(), c.getStep(), c.getPosition(), c.getHolder(),
                    c.getLeaseMs(), at);
        }
        if (proto.hasJobResultRecorded()) {
            JobResultRecordedCommand c = proto.getJobResultRecorded();
            return new ClusterCommand.JobResultRecorded(c.getJobId(), c.getStep(), c.getPosition(),
                    c.getData().toByteArray(), at);
        }
        if (!proto.hasJobDefined()) {
            return null;
        }
        JobDefinedCommand c = proto.getJobDefined();
        return new ClusterCommand.JobDefined(new JobRecord(c.getJobId(), c.getDatasetSha256(), c.getSamples(),
                c.getBatchSize(), c.getSeed(), c.getMaxTokens(), c.getTemperature(), c.getTopP(), c.getTopK(), at,
                c.getMaxResultBytes()), at);
    }
}
