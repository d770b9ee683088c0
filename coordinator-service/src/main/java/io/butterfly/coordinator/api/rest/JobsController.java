package io.butterfly.coordinator.api.rest;

import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.common.api.BatchJob;
import io.butterfly.common.api.BatchJobs;
import io.butterfly.common.api.JobDataset;
import io.butterfly.common.api.JobResultLine;
import io.butterfly.common.web.audit.AuditLog;
import io.butterfly.coordinator.api.jobs.FileDatasetStore;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.config.JobsProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.cluster.JobResult;
import io.butterfly.coordinator.cluster.JobWork;
import io.butterfly.coordinator.jobs.DatasetEntry;
import io.butterfly.coordinator.jobs.JobProgress;
import io.butterfly.coordinator.jobs.SampleSeeds;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.net.URI;
import java.time.Clock;
import java.time.Instant;
import java.util.Base64;
import java.util.NoSuchElementException;
import java.util.Objects;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.StreamingResponseBody;
import tools.jackson.databind.json.JsonMapper;

/**
 * Batch jobs (docs/jobs.md), defined by an operator (admin key): {@code POST /api/v1/jobs/datasets} imports a JSONL
 * dataset into the dataset store and names it by its SHA-256; {@code POST /api/v1/jobs} defines a job over it, which
 * the control log replicates (its metadata and the dataset's SHA-256, never the dataset). JOBS clients then pull its
 * batches from the JOBS port; {@code GET /api/v1/jobs/{id}/results} streams the RESULTs the control log committed,
 * as JSONL, from this replica's copy of the replicated state.
 */
@RestController
@RequestMapping("/api/v1/jobs")
public class JobsController {

    private final ControlLog control;
    private final FileDatasetStore datasets;
    private final JsonMapper json;
    private final Clock clock;
    private final JobsProperties jobs;
    private final CoordinatorProperties props;

    public JobsController(ControlLog control, FileDatasetStore datasets, JsonMapper json, Clock clock,
                          JobsProperties jobs, CoordinatorProperties props) {
        this.control = control;
        this.datasets = datasets;
        this.json = json;
        this.clock = clock;
        this.jobs = jobs;
        this.props = props;
    }

    /** A job's definition; snake_case as in the API. Absent sampling fields: max_tokens 64, temperature 1, top_p 1. */
    public record Body(String id,
                       @JsonProperty("dataset_sha256") String datasetSha256,
                       @JsonProperty("batch_size") Integer batchSize,
                       Long seed,
                       @JsonProperty("max_tokens") Integer maxTokens,
                       Double temperature,
                       @JsonProperty("top_p") Double topP,
                       @JsonProperty("top_k") Integer topK) {
    }

    /** The dataset's bytes as the body: JSONL, a prompt or a conversation a line. */
    @PostMapping(path = "/datasets", consumes = {"application/x-ndjson", "application/jsonl", MediaType.TEXT_PLAIN_VALUE,
            MediaType.APPLICATION_OCTET_STREAM_VALUE})
    public ResponseEntity<JobDataset> importDataset(@RequestBody byte[] jsonl) {
        if (jsonl.length > jobs.maxDatasetBytes().toBytes()) {
            throw new InvalidRequestException("dataset", "the dataset is " + jsonl.length + " bytes, over the "
                    + jobs.maxDatasetBytes().toBytes() + " of butterfly.coordinator.jobs.max-dataset-bytes", true);
        }
        FileDatasetStore.Imported imported = datasets.store(jsonl);
        AuditLog.action("import-dataset", imported.sha256(), "accepted", imported.entries().size() + " samples");
        return ResponseEntity.created(URI.create("/api/v1/jobs/datasets/" + imported.sha256()))
                .body(new JobDataset(imported.sha256(), imported.entries().size(), jsonl.length));
    }

    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE)
    public ResponseEntity<BatchJob> define(@RequestBody Body body) {
        JobRecord job = validated(body);
        control.submit(new ClusterCommand.JobDefined(job, clock.millis()));
        AuditLog.action("define-job", job.id(), "accepted", job.samples() + " samples, batch " + job.batchSize());
        return ResponseEntity.created(URI.create("/api/v1/jobs/" + job.id())).body(view(job));
    }

    @GetMapping
    public BatchJobs list() {
        return new BatchJobs(control.state().jobs().values().stream().map(this::view).toList());
    }

    @GetMapping("/{id}")
    public BatchJob get(@PathVariable("id") String id) {
        return view(job(id));
    }

    /**
     * The job's results, by step then position, a JSON line each ({@link JobResultLine}), written as they are read from
     * one immutable copy of the replicated state: a replica answers every result committed up to it.
     */
    @GetMapping(path = "/{id}/results", produces = "application/x-ndjson")
    public ResponseEntity<StreamingResponseBody> results(@PathVariable("id") String id) {
        JobRecord job = job(id);
        List<JobResult> results = new ArrayList<>(control.state().workOf(job.id()).results().values());
        results.sort(Comparator.comparing(JobResult::step, Long::compareUnsigned)
                .thenComparing(JobResult::position, Long::compareUnsigned));
        Optional<List<DatasetEntry>> entries = datasets.entries(job.datasetSha256());
        StreamingResponseBody body = out -> {
            for (JobResult r : results) {
                out.write(json.writeValueAsBytes(line(job, r, entries)));
                out.write('\n');
            }
        };
        return ResponseEntity.ok().contentType(MediaType.parseMediaType("application/x-ndjson")).body(body);
    }

    private static JobResultLine line(JobRecord job, JobResult r, Optional<List<DatasetEntry>> entries) {
        List<JobResultLine.Sample> samples = new ArrayList<>();
        if (entries.isPresent()) {
            for (long p = r.position(); p < JobWork.batchEnd(job, r.position()); p++) {
                DatasetEntry e = entries.get().get((int) p);
                samples.add(new JobResultLine.Sample(p, Long.toUnsignedString(SampleSeeds.of(job.seed(), r.step(), p)),
                        e.prompt(), e.messages() == null ? null : e.messages().stream()
                        .map(m -> new JobResultLine.Message(m.role(), m.content(), m.name())).toList()));
            }
        }
        return new JobResultLine(job.id(), job.seed(), r.step(), r.position(),
                Instant.ofEpochMilli(r.recordedAtMs()).toString(), r.size(),
                Base64.getEncoder().encodeToString(r.data()), samples);
    }

    private JobRecord job(String id) {
        JobRecord job = control.state().jobs().get(id);
        if (job == null) {
            throw new NoSuchElementException("no job " + id);
        }
        return job;
    }

    private BatchJob view(JobRecord j) {
        JobProgress p = JobProgress.of(j, control.state().workOf(j.id()), clock.millis());
        return new BatchJob(j.id(), j.datasetSha256(), j.samples(), j.batchSize(), j.seed(), j.maxTokens(),
                j.temperature(), j.topP(), j.topK(), Instant.ofEpochMilli(j.definedAtMs()).toString(),
                j.maxResultBytes(), new BatchJob.Progress(p.steps(), p.done(), p.leased(), p.pending(), p.results(),
                p.resultBytes(), p.resultsPerSecond()));
    }

    /** Each refusal names its field; the reducer then refuses only a job defined meanwhile at another replica. */
    private JobRecord validated(Body b) {
        if (b.id() == null || !b.id().matches("[a-z0-9][a-z0-9-]{0,63}")) {
            throw new InvalidRequestException("id", "id is 1 to 64 of [a-z0-9-], starting with a letter or digit");
        }
        if (control.state().jobs().containsKey(b.id())) {
            throw new InvalidRequestException("id", "job " + b.id() + " exists already");
        }
        if (b.datasetSha256() == null || !b.datasetSha256().matches("[0-9a-f]{64}")) {
            throw new InvalidRequestException("dataset_sha256", "dataset_sha256 is the SHA-256 POST /api/v1/jobs/datasets"
                    + " answered (64 lower-case hex digits)");
        }
        long samples = datasets.entries(b.datasetSha256()).orElseThrow(() -> new InvalidRequestException(
                "dataset_sha256", "no dataset " + b.datasetSha256() + " in this coordinator's dataset store")).size();
        if (b.batchSize() == null || b.batchSize() < 1 || b.batchSize() > jobs.maxBatchSize()) {
            throw new InvalidRequestException("batch_size", "batch_size is 1 to " + jobs.maxBatchSize()
                    + " (butterfly.coordinator.jobs.max-batch-size)");
        }
        if (b.seed() == null || b.seed() < 0) {
            throw new InvalidRequestException("seed", "seed is an integer in [0, 2^63)");
        }
        if (control.state().jobs().values().stream().anyMatch(j -> j.seed() == b.seed())) {
            throw new InvalidRequestException("seed", "another job has seed " + b.seed()
                    + " (a JOBS client names a job by its seed)");
        }
        int maxTokens = Objects.requireNonNullElse(b.maxTokens(), 64);
        if (maxTokens < 1 || maxTokens > props.maxNewTokens()) {
            throw new InvalidRequestException("max_tokens", "max_tokens is 1 to " + props.maxNewTokens());
        }
        double temperature = Objects.requireNonNullElse(b.temperature(), 1.0);
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new InvalidRequestException("temperature", "temperature is finite and >= 0");
        }
        double topP = Objects.requireNonNullElse(b.topP(), 1.0);
        if (!(topP > 0 && topP <= 1)) {
            throw new InvalidRequestException("top_p", "top_p is in (0, 1]");
        }
        int topK = Objects.requireNonNullElse(b.topK(), 0);
        if (topK < 0) {
            throw new InvalidRequestException("top_k", "top_k is >= 0 (0: every token)");
        }
        return new JobRecord(b.id(), b.datasetSha256(), samples, b.batchSize(), b.seed(), maxTokens, temperature, topP,
                topK, clock.millis(), jobs.maxResultBytes().toBytes());
    }
}
