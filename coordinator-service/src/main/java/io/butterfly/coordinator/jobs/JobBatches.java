package io.butterfly.coordinator.jobs;

import io.butterfly.coordinator.chat.ChatPrompt;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.engine.Sequence;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A job's batch generated (docs/jobs.md): the samples at dataset positions [position, position + batch size), clipped
 * to the dataset's end, each through the coordinator's own inference ({@link InferenceService}: validation, the
 * engine's continuous batching with everyone else's requests, the task journal) with the seed {@link SampleSeeds}
 * derives. The samples of a batch are queued together, all or none; the job is one tenant of the engine's fair queue
 * ({@code job:<id>}), so a job shares the engine with interactive clients rather than crowding them out.
 */
public final class JobBatches {

    private final InferenceService inference;
    private final Datasets datasets;
    private final int maxPromptChars;

    public JobBatches(InferenceService inference, Datasets datasets, int maxPromptChars) {
        this.inference = inference;
        this.datasets = datasets;
        this.maxPromptChars = maxPromptChars;
    }

    /** The dataset positions of the batch at {@code position}: at most the job's batch size, none past its end. */
    public static long batchEnd(JobRecord job, long position) {
        return io.butterfly.coordinator.cluster.JobWork.batchEnd(job, position);
    }

    /**
     * The batch's samples encoded ({@link BatchPayload}). Refusals come before any work, as the inference's own
     * (not serving, a full queue, a prompt too long); a sample that fails fails the batch.
     *
     * @throws DatasetUnavailableException if this replica does not hold the job's dataset
     */
    public CompletableFuture<byte[]> generate(JobRecord job, long step, long position) {
        List<DatasetEntry> entries = datasets.entries(job.datasetSha256())
                .orElseThrow(() -> new DatasetUnavailableException(job));
        Requester requester = new Requester(Sequence.BACKGROUND_PREFIX + job.id(), true);
        List<InferenceService.Prepared> prepared = new ArrayList<>();
        List<Long> seeds = new ArrayList<>();
        for (long p = position; p < batchEnd(job, position); p++) {
            long seed = SampleSeeds.of(job.seed(), step, p);
            seeds.add(seed);
            prepared.add(inference.prepare(request(job, entries.get((int) p), seed), null, requester));
        }
        List<RequestHandle> handles = inference.submitAll(prepared);
        CompletableFuture<?>[] results = handles.stream().map(RequestHandle::result).toArray(CompletableFuture[]::new);
        return CompletableFuture.allOf(results).thenApply(done -> {
            List<Sample> samples = new ArrayList<>();
            for (int i = 0; i < handles.size(); i++) {
                GenerationResult r = handles.get(i).result().join();
                samples.add(new Sample(position + i, seeds.get(i), r.finishReason(), r.tokenIds(), r.text()));
            }
            return BatchPayload.encode(samples);
        });
    }

    private GenerationRequest request(JobRecord job, DatasetEntry entry, long seed) {
        String prompt = entry.prompt();
        List<Long> tokenIds = null;
        if (entry.messages() != null) {
            tokenIds = Arrays.stream(ChatPrompt.tokens(inference.servedModel(), entry.messages(), maxPromptChars))
                    .boxed().toList();
        }
        return new GenerationRequest(prompt, tokenIds, job.maxTokens(), job.temperature(), job.topP(), job.topK(),
                seed, 0, false, null);
    }

    /** This replica lacks the dataset the job names (docs/jobs.md: the dataset store). */
    public static final class DatasetUnavailableException extends RuntimeException {
        public DatasetUnavailableException(JobRecord job) {
            super("this coordinator does not hold job " + job.id() + "'s dataset " + job.datasetSha256()
                    + " (butterfly.coordinator.jobs.dataset-dir is not shared with the replica it was imported at)");
        }
    }
}
