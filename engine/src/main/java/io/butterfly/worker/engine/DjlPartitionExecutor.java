package io.butterfly.worker.engine;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.KvCacheSizing;
import io.butterfly.common.text.ByteSize;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Runs a partition of a Llama-family or GPT-2 model with DJL on the PyTorch engine, in float32.
 *
 * <p>Loading reads only the tensors the partition needs from the given files (see {@link WeightStore}).
 * Device: "cpu", "gpu:N", or "auto" (GPU 0 if the engine reports one). Threads: {@code threads > 0} sets
 * libtorch's process-wide intra-op pool (see {@link EngineSetup}).
 *
 * <p>Memory: weights live in one sub-manager, each sequence's KV cache in its own sub-manager (freed by
 * {@link #release}), and every temporary of a step is registered in an {@link NDScope} closed when the
 * step ends, so native memory stays flat over any number of steps. Calls are serialized (synchronized):
 * the engine's intra-op threads already use the cores. Loads and forward passes run on the options' engine thread
 * ({@link ExecutorOptions#engineThread}: the worker's own), or on the caller's when they name none.
 */
public final class DjlPartitionExecutor implements PartitionExecutor {

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DjlPartitionExecutor.class);

    private final PartitionSpec spec;
    private final NDManager root;
    private final NDManager cacheManager;
    private final StageModel model;
    private final long weightBytes;
    /** The most memory all KV caches may take together (0 = no limit), see {@link #checkCacheBudget}. */
    private final long kvCacheBudget;
    /** A step's rows are padded to a multiple of this: the projections' row quantum when batch-invariant, else 1. */
    private final int rowQuantum;
    private final Map<String, SequenceCache> caches = new HashMap<>();
    /** What the caches take and hold, recounted whenever they change: readable while a step runs. */
    private volatile long cachedBytes;
    /** Counted against the budget: each cache's reservation, or what it takes if that is more. */
    private volatile long accountedBytes;
    private volatile int cachedSequences;
    /** Tokens of steps answered from what this stage sent before ({@link SentRows}) rather than computed. */
    private volatile long answeredTokens;
    /** Full blocks of prompts kept for sequences that start alike; null when prefix caching is off. */
    private final PrefixCache prefixes;
    /** Where the prefix cache's blocks live (each closed on eviction). */
    private final NDManager prefixManager;
    /** When each cached sequence last ran a step (System.nanoTime), for {@link #evictIdle}. */
    private final Map<String, Long> lastUsed = new HashMap<>();
    /**
     * Sequences released before any step of theirs arrived here: a release can overtake its own first step
     * (a different stream), and that step must then not create a cache nobody would release. Bounded, oldest
     * forgotten first.
     */
    private final Map<String, Boolean> releasedUnseen = new java.util.LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > RELEASED_REMEMBERED;
        }
    };
    private static final int RELEASED_REMEMBERED = 65_536;
    private boolean closed;
    /** Where forward passes run (null: on the caller's thread). */
    private final EngineThread engineThread;

    private DjlPartitionExecutor(PartitionSpec spec, NDManager root, NDManager cacheManager, StageModel model, long weightBytes,
                                 ExecutorOptions options) {
        this.spec = spec;
        this.weightBytes = weightBytes;
        this.kvCacheBudget = options.kvCacheBytes();
        this.rowQuantum = options.batchInvariant() ? model.rowQuantum() : 1;
        this.root = root;
        this.cacheManager = cacheManager;
        this.model = model;
        this.prefixManager = cacheManager.newSubManager();
        this.prefixes = options.prefixCaching()
                ? new PrefixCache(PrefixCache.BLOCK_TOKENS * bytesPerPosition(), PrefixCache.heapAllowance()) : null;
        this.engineThread = options.engineThread();
    }

    /**
     * Loads the tensors this partition needs from the given safetensors files (any split of the
     * checkpoint that holds them, with their Hugging Face names).
     */
    public static DjlPartitionExecutor load(PartitionSpec spec, List<Path> safetensorsFiles, ExecutorOptions options)
            throws IOException {
        List<SafetensorsFile> opened = new ArrayList<>(safetensorsFiles.size());
        try {
            for (Path p : safetensorsFiles) {
                opened.add(SafetensorsFile.open(p));
            }
        } catch (IOException | RuntimeException e) {
            SafetensorsFile.closeAll(opened, e);
            throw e;
        }
        return loadOpened(spec, opened, options);
    }

    /**
     * {@link #load} from safetensors files already open, e.g. through the channels their checksums were verified
     * through, so that what is loaded is what was checked. Closes them, whether the load succeeds or fails.
     */
    public static DjlPartitionExecutor loadOpened(PartitionSpec spec, List<SafetensorsFile> opened, ExecutorOptions options)
            throws IOException {
        return EngineThread.on(options.engineThread(), () -> loadOnEngineThread(spec, opened, options));
    }

    private static DjlPartitionExecutor loadOnEngineThread(PartitionSpec spec, List<SafetensorsFile> opened,
                                                           ExecutorOptions options) throws IOException {
        Objects.requireNonNull(spec, "spec");
        Objects.requireNonNull(options, "options");
        NDManager root = EngineSetup.rootManager(options, opened);
        try {
            NDManager weights = root.newSubManager();
            StageModel model;
            try (WeightStore store = WeightStore.open(opened, weights)) {
                model = loadModel(spec, store, weights, options);
            }
            return new DjlPartitionExecutor(spec, root, root.newSubManager(), model, model.weightBytes(), options);
        } catch (IOException | RuntimeException e) {
            root.close();
            throw e;
        }
    }

    private static StageModel loadModel(PartitionSpec spec, WeightStore store, NDManager weights, ExecutorOptions options) {
        boolean gpt2 = spec.config().architecture() == Architecture.GPT2;
        if (!gpt2 && nativeKernels(spec, store, weights, options)) {
            if (options.kernels() == CpuKernels.NATIVE || store.anyQuantized()) {
                return NativeLlamaStage.load(spec, store, weights, options.threads(), options.activations());
            }
            // float32 by default: a stage the kernels refuse (a bias they do not add, a width they do not divide) or
            // cannot link (a library without a call this class declares) computes on libtorch instead, the memory
            // the refused load took given back
            NDManager attempt = weights.newSubManager();
            try {
                return NativeLlamaStage.load(spec, store, attempt, options.threads(), options.activations());
            } catch (IllegalArgumentException | LinkageError e) {
                attempt.close();
                LOG.warn("float32 stage on libtorch's kernels, not the native ones: {}", e.getMessage());
            }
        }
        TorchScript script = compile(weights, gpt2, options);
        try {
            return gpt2 ? Gpt2Stage.load(spec, store, weights, script, options.weightDtype())
                    : LlamaStage.load(spec, store, weights, script, options.weightDtype(), options.experts());
        } catch (RuntimeException e) {
            script.close();
            throw e;
        }
    }

    /**
     * Whether a Llama-family stage computes with the native kernels: when asked to, or by default (AUTO) when its
     * weights are quantized (libtorch's stages would compute on them dequantized to float32, four to eight times the
     * memory) or computed in float32: the kernels give a row the same bits whatever rows share its step, so a prompt
     * prefilled in any chunks gives the bits of its steps, which audits, referees and resume by replay compare
     * (libtorch's oneDNN products sum differently for different row counts). Not when the model has parts the kernels
     * do not compute (experts, q/k norms), nor for half-precision weights (libtorch's half products): libtorch's stage
     * computes those. TORCH keeps libtorch's for every stage.
     */
    private static boolean nativeKernels(PartitionSpec spec, WeightStore store, NDManager weights, ExecutorOptions options) {
        if (weights.getDevice().isGpu() || options.kernels() == CpuKernels.TORCH) {
            return false;
        }
        if (options.kernels() == CpuKernels.NATIVE) {
            return true; // NativeLlamaStage.load says why if the kernels are missing
        }
        boolean quantized = store.anyQuantized();
        if (!quantized && options.weightDtype().half()) {
            return false;
        }
        String what = quantized ? "quantized weights are dequantized to float32 at load" : "float32 stage on libtorch's kernels";
        if (!NativeLlamaStage.computes(spec.config())) {
            if (quantized) {
                LOG.warn("{}: the native kernels compute no experts or q/k norms", what);
            }
            return false;
        }
        if (!NativeKernels.available()) {
            LOG.warn("{}: {}", what, NativeKernels.loadError().orElse(""));
            return false;
        }
        return true;
    }

    /**
     * The stage's TorchScript: on a CPU (float32) with projections on weights reordered for oneDNN, else packed for
     * MKL's GEMM, else as loaded (as on a GPU); in half precision when asked.
     */
    private static TorchScript compile(NDManager manager, boolean gpt2, ExecutorOptions options) {
        String moduleClass = gpt2 ? "Gpt2Stage" : "LlamaStage";
        String source = gpt2 ? "gpt2.py" : "llama.py";
        if (options.weightDtype().half()) {
            return TorchScript.compile(manager, moduleClass, source, TorchScript.Linear.HALF, options.profiled());
        }
        if (!manager.getDevice().isGpu()) {
            return TorchScript.compileForCpu(manager, moduleClass, source, options.profiled());
        }
        return TorchScript.compile(manager, moduleClass, source, TorchScript.Linear.PLAIN, options.profiled());
    }

    @Override
    public PartitionSpec spec() {
        return spec;
    }

    /** Bytes of the weights this partition holds (a tied head counted once). */
    @Override
    public long weightBytes() {
        return weightBytes;
    }

    @Override
    public String projections() {
        return model.projections();
    }

    /** Whether this partition is an expert group of another worker's stage (it answers {@link #expertGroup}, no steps). */
    public boolean holdsExpertsOnly() {
        return spec.experts() != null && spec.experts().expertsOnly();
    }

    private final Object expertLock = new Object();

    /**
     * This expert group's sum over rows of another worker's step (see {@link ExpertExchange}). Computed on the calling
     * thread, not the engine thread: the stage that asks holds that thread while it waits (in one process, as in the
     * in-process cluster, the two would wait on each other), and a worker holding only experts runs nothing else.
     */
    public float[] expertGroup(int layer, int rows, float[] hidden, long[] chosen, float[] weights) {
        if (!holdsExpertsOnly() || !(model instanceof LlamaStage llama)) {
            throw new IllegalStateException("this worker holds no expert group of another worker's stage");
        }
        synchronized (expertLock) {
            if (closed) {
                throw new SequenceConflictException("this partition was replaced by a newer assignment");
            }
            try (NDManager m = root.newSubManager()) {
                return llama.expertGroup(m, layer, rows, hidden, chosen, weights);
            }
        }
    }

    /** Rows a batch-invariant step is padded to a multiple of (1: none). */
    int rowQuantum() {
        return model.rowQuantum();
    }

    /** The device the partition runs on. */
    public Device device() {
        return root.getDevice();
    }

    @Override
    public StageResult forward(List<SequenceChunk> batch, StageInput input) {
        return forward(batch, input, null);
    }

    @Override
    public StageResult forward(List<SequenceChunk> batch, StageInput input, LayerProbe probe) {
        if (holdsExpertsOnly()) {
            throw new SequenceConflictException("this worker holds an expert group of another worker's stage, not a stage");
        }
        if (probe != null && !model.layerProbes()) {
            throw new UnsupportedOperationException("this stage computes its layers in one call (" + model.projections()
                    + ") and cannot show them one by one");
        }
        return EngineThread.on(engineThread, () -> forwardOnEngineThread(batch, input, probe));
    }

    @Override
    public boolean layerProbes() {
        return model.layerProbes();
    }

    /**
     * One step. A sequence's chunk that this stage computed before from the same inputs (a replay after a resume: see
     * {@link SentRows}) is answered with the rows it sent then; a chunk whose first full blocks are in the prefix cache
     * has them restored and computes only the rest; the others are computed together, after rewinding a cache that
     * held other inputs at their positions.
     */
    private synchronized StageResult forwardOnEngineThread(List<SequenceChunk> batch, StageInput input,
                                                           LayerProbe probe) {
        if (closed) {
            throw new SequenceConflictException("this partition was replaced by a newer assignment");
        }
        int totalTokens = validate(batch, input);
        long[] keys = InputKeys.of(input, totalTokens, spec.config().hiddenSize());
        // Leading tokens of each chunk not computed: all of an answered one, the restored blocks of a prefix hit.
        int[] skipped = new int[batch.size()];
        int[] inputOffsets = new int[batch.size()];
        List<SequenceChunk> unanswered = new ArrayList<>(batch.size());
        int offset = 0;
        for (int i = 0; i < batch.size(); i++) {
            SequenceChunk chunk = batch.get(i);
            SequenceCache cache = caches.get(chunk.sequenceId());
            inputOffsets[i] = offset;
            if (probe == null && cache != null && cache.answers(chunk, keys, offset, spec.hasHead())) {
                skipped[i] = chunk.numTokens();
                answeredTokens += chunk.numTokens();
            } else {
                unanswered.add(chunk);
            }
            offset += chunk.numTokens();
        }
        if (!unanswered.isEmpty()) {
            checkCacheBudget(unanswered); // before the lookups: it may evict blocks
        }
        List<SequenceChunk> computed = new ArrayList<>(unanswered.size());
        List<PrefixHit> hits = new ArrayList<>(unanswered.size());
        for (int i = 0; i < batch.size(); i++) {
            SequenceChunk chunk = batch.get(i);
            if (skipped[i] == chunk.numTokens()) {
                continue;
            }
            PrefixHit hit = probe != null ? null : prefixHit(chunk, caches.get(chunk.sequenceId()), keys, inputOffsets[i]);
            hits.add(hit);
            skipped[i] = hit == null ? 0 : hit.tokens();
            computed.add(skipped[i] == 0 ? chunk : new SequenceChunk(chunk.sequenceId(), chunk.position() + skipped[i],
                    chunk.numTokens() - skipped[i], chunk.reservePositions(), chunk.skipLogits()));
        }
        boolean allComputed = Arrays.stream(skipped).allMatch(n -> n == 0);
        StageResult result = computed.isEmpty() ? null
                : compute(computed, hits, allComputed ? input : inputOf(batch, skipped, input), keys, batch, skipped,
                inputOffsets, probe);
        long now = System.nanoTime();
        batch.forEach(chunk -> lastUsed.put(chunk.sequenceId(), now));
        if (spec.hasHead()) {
            return result == null ? noLogits() : result; // an answered chunk wants no logits on the last stage
        }
        return allComputed ? result : sentRows(batch, skipped, result, totalTokens);
    }

    /** Blocks of the prefix cache that a chunk starts with, and their chain hashes. */
    private record PrefixHit(List<PrefixCache.Block> blocks, long[] hashes) {

        int tokens() {
            return blocks.size() * PrefixCache.BLOCK_TOKENS;
        }
    }

    /**
     * The blocks of the prefix cache that continue a chunk starting at a block boundary, leaving at least its last
     * token to compute (its logits, or its sent row, come from a step); null if none.
     */
    private PrefixHit prefixHit(SequenceChunk chunk, SequenceCache cache, long[] keys, int offset) {
        int b = PrefixCache.BLOCK_TOKENS;
        if (prefixes == null || chunk.position() % b != 0 || chunk.numTokens() <= b) {
            return null;
        }
        long previous = 0;
        if (chunk.position() > 0) {
            long[] chain = cache == null ? new long[0] : cache.blockHashes();
            if (chain.length < chunk.position() / b) {
                return null;
            }
            previous = chain[chunk.position() / b - 1];
        }
        long[] hashes = PrefixHashes.chain(previous, keys, offset, chunk.numTokens(), b);
        List<PrefixCache.Block> found = prefixes.lookup(hashes, (chunk.numTokens() - 1) / b);
        return found.isEmpty() ? null : new PrefixHit(found, hashes);
    }

    /** Computes the chunks not answered from what was sent before, and records what they feed and send. */
    @SuppressWarnings("try") // the scope only frees temporaries on close
    private StageResult compute(List<SequenceChunk> chunks, List<PrefixHit> hits, StageInput input, long[] keys,
                                List<SequenceChunk> batch, int[] skipped, int[] inputOffsets, LayerProbe probe) {
        List<String> created = new ArrayList<>();
        List<StepBatch.Slice> slices = new ArrayList<>(chunks.size());
        int totalTokens = 0;
        try {
            for (int c = 0; c < chunks.size(); c++) {
                SequenceChunk chunk = chunks.get(c);
                SequenceCache cache = caches.get(chunk.sequenceId());
                if (cache == null) {
                    cache = new SequenceCache(cacheManager, spec.config(), spec.numLayers(), spec.hasHead(),
                            chunk.reservePositions());
                    caches.put(chunk.sequenceId(), cache);
                    created.add(chunk.sequenceId());
                }
                PrefixHit hit = hits.get(c);
                cache.ensureCapacity(chunk.position() + chunk.numTokens());
                if (hit != null) {
                    cache.restore(chunk.position() - hit.tokens(), hit.blocks(), hit.hashes());
                }
                cache.rewind(chunk.position());
                slices.add(new StepBatch.Slice(chunk, cache, totalTokens));
                totalTokens += chunk.numTokens();
            }
            StageResult result;
            try (NDScope ignored = new NDScope()) {
                StepBatch step = new StepBatch(root, slices, totalTokens, rowQuantum);
                NDArray x = input instanceof StageInput.Tokens tokens
                        ? model.embed(root.create(step.tokenIds(tokens.ids())), step)
                        : step.padded(hiddenStates(((StageInput.Hidden) input).littleEndianFloats(), totalTokens));
                x = model.layers(x, step, probe);
                if (!spec.hasHead()) {
                    result = toResult(step.tokenRows(x), false);
                } else if (step.logitRows() == 0) {
                    result = noLogits(); // every sequence skips them: no head at all
                } else {
                    result = toResult(step.sequenceRows(model.head(x, step.lastRows())), true);
                }
            } finally {
                model.rest();
            }
            ByteBuffer sent = spec.hasHead() ? null : result.littleEndianFloats().duplicate();
            for (int i = 0, s = 0; i < batch.size(); i++) {
                if (skipped[i] == batch.get(i).numTokens()) {
                    continue;
                }
                StepBatch.Slice slice = slices.get(s++);
                if (sent != null) {
                    sent.position(slice.rowOffset() * sentRowBytes());
                }
                slice.cache().append(keys, inputOffsets[i] + skipped[i], slice.numTokens(), sent);
                offerBlocks(slice.cache());
            }
            return result;
        } catch (RuntimeException | Error e) { // an Error too (e.g. heap exhausted): no cache of a failed step stays
            created.forEach(this::dropCache);
            throw e;
        } finally {
            recount();
        }
    }

    /**
     * Keeps the full blocks a sequence's cache filled since they were last offered, making room for them by evicting
     * the least recently used blocks; a block that does not fit the budget beside the sequences' caches is not kept.
     */
    private void offerBlocks(SequenceCache cache) {
        if (prefixes == null) {
            return;
        }
        long[] hashes = cache.blockHashes();
        for (int b = cache.offeredBlocks(); b < hashes.length; b++) {
            if (!prefixes.contains(hashes[b])) {
                if (!roomForBlock()) {
                    break;
                }
                prefixes.put(hashes[b], cache.copyBlock(b, prefixManager));
            }
            cache.offeredBlocks(b + 1);
        }
    }

    private boolean roomForBlock() {
        if (kvCacheBudget == 0) {
            while (!prefixes.roomUnbudgeted() && prefixes.evictOldest()) {
                // the oldest first
            }
            return prefixes.roomUnbudgeted();
        }
        long sequences = 0;
        for (SequenceCache c : caches.values()) {
            sequences += c.accountedBytes();
        }
        while (sequences + prefixes.bytes() + prefixes.bytesPerBlock() > kvCacheBudget && prefixes.evictOldest()) {
            // the oldest first
        }
        return sequences + prefixes.bytes() + prefixes.bytesPerBlock() <= kvCacheBudget;
    }

    /** The input rows of the tokens computed (past each chunk's skipped ones), in batch order. */
    private StageInput inputOf(List<SequenceChunk> batch, int[] skipped, StageInput input) {
        if (input instanceof StageInput.Tokens tokens) {
            long[] ids = new long[tokens.ids().length];
            int n = 0;
            for (int i = 0, offset = 0; i < batch.size(); offset += batch.get(i).numTokens(), i++) {
                int rows = batch.get(i).numTokens() - skipped[i];
                System.arraycopy(tokens.ids(), offset + skipped[i], ids, n, rows);
                n += rows;
            }
            return new StageInput.Tokens(Arrays.copyOf(ids, n));
        }
        ByteBuffer all = ((StageInput.Hidden) input).littleEndianFloats();
        int rowBytes = spec.config().hiddenSize() * Float.BYTES;
        ByteBuffer rows = ByteBuffer.allocate(all.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0, offset = 0; i < batch.size(); offset += batch.get(i).numTokens(), i++) {
            ByteBuffer chunk = all.duplicate();
            chunk.position(all.position() + (offset + skipped[i]) * rowBytes)
                    .limit(all.position() + (offset + batch.get(i).numTokens()) * rowBytes);
            rows.put(chunk);
        }
        return new StageInput.Hidden(rows.flip());
    }

    /** The hidden states a stage before the last sends on: each chunk's rows, answered or computed now. */
    private StageResult sentRows(List<SequenceChunk> batch, int[] skipped, StageResult computed, int totalTokens) {
        int rowBytes = sentRowBytes();
        ByteBuffer out = ByteBuffer.allocate(totalTokens * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer fresh = computed == null ? null : computed.littleEndianFloats().duplicate();
        for (int i = 0; i < batch.size(); i++) {
            SequenceChunk chunk = batch.get(i);
            if (skipped[i] > 0) {
                caches.get(chunk.sequenceId()).copySent(chunk.position(), skipped[i], out);
            }
            int rows = chunk.numTokens() - skipped[i];
            if (rows > 0) {
                out.put(fresh.slice(fresh.position(), rows * rowBytes));
                fresh.position(fresh.position() + rows * rowBytes);
            }
        }
        return new StageResult(out.flip(), new long[]{totalTokens, spec.config().hiddenSize()}, false);
    }

    /** Bytes of a row this stage sends on and keeps ({@link SentRows}): none on the last stage. */
    private int sentRowBytes() {
        return spec.hasHead() ? 0 : spec.config().hiddenSize() * Float.BYTES;
    }

    /** Checks the batch against the caches and the input against the batch; returns the token count. */
    private int validate(List<SequenceChunk> batch, StageInput input) {
        if (batch == null || batch.isEmpty()) {
            throw new IllegalArgumentException("the batch has no sequences");
        }
        Objects.requireNonNull(input, "input");
        ModelConfig c = spec.config();
        Set<String> seen = new HashSet<>();
        long total = 0;
        for (SequenceChunk chunk : batch) {
            if (!seen.add(chunk.sequenceId())) {
                throw new IllegalArgumentException("sequence '" + chunk.sequenceId() + "' appears twice in the batch");
            }
            SequenceCache cache = caches.get(chunk.sequenceId());
            if (cache == null && releasedUnseen.containsKey(chunk.sequenceId())) {
                throw new SequenceConflictException("sequence '" + chunk.sequenceId() + "' was released before this step arrived");
            }
            int cached = cache == null ? 0 : cache.length();
            if (chunk.position() > cached) { // an earlier position is a replay, or feeds the sequence anew from there
                throw new SequenceConflictException("sequence '" + chunk.sequenceId() + "' starts at position "
                        + chunk.position() + " but " + cached + " positions are cached on layers ["
                        + spec.layerStart() + ", " + spec.layerEnd() + ")");
            }
            long reach = (long) chunk.position() + chunk.numTokens();
            if (reach > c.maxPositions()) {
                throw new IllegalArgumentException("sequence '" + chunk.sequenceId() + "' would reach position "
                        + reach + " beyond the model's " + c.maxPositions());
            }
            // Attention builds an [n, cached + n] mask per sequence: keep it an addressable array.
            if ((long) chunk.numTokens() * reach > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("sequence '" + chunk.sequenceId() + "': a step of " + chunk.numTokens()
                        + " tokens reaching position " + reach + " is too large for one step; split it");
            }
            total += chunk.numTokens();
        }
        if (total > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("batch of " + total + " tokens is too large");
        }
        if (spec.hasEmbedding()) {
            if (!(input instanceof StageInput.Tokens tokens)) {
                throw new IllegalArgumentException("layers [" + spec.layerStart() + ", " + spec.layerEnd()
                        + ") hold the embedding and take token ids, not hidden states");
            }
            if (tokens.ids().length != total) {
                throw new IllegalArgumentException(tokens.ids().length + " token ids for a batch of " + total + " tokens");
            }
            for (long id : tokens.ids()) {
                if (id < 0 || id >= c.vocabSize()) {
                    throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, " + c.vocabSize() + ")");
                }
            }
        } else {
            if (!(input instanceof StageInput.Hidden hidden)) {
                throw new IllegalArgumentException("layers [" + spec.layerStart() + ", " + spec.layerEnd()
                        + ") take hidden states from the previous stage, not token ids");
            }
            long expected = total * c.hiddenSize() * Float.BYTES;
            if (hidden.littleEndianFloats().remaining() != expected) {
                throw new IllegalArgumentException("hidden states of " + hidden.littleEndianFloats().remaining()
                        + " bytes do not match [" + total + ", " + c.hiddenSize() + "] float32 (" + expected + " bytes)");
            }
        }
        return (int) total;
    }

    /**
     * Refuses a step whose cache growth would take all caches past the budget, before anything is cached
     * or grown: many concurrent long sequences must not exhaust the worker's memory (and take down every
     * sequence it holds) but be refused one at a time until others finish. A sequence that states its
     * reservation gets its whole cache at its first step, so only a starting sequence is refused; one that
     * could never fit, even alone, is told so (not to retry).
     */
    private void checkCacheBudget(List<SequenceChunk> batch) {
        if (kvCacheBudget == 0) {
            return;
        }
        long held = accountedBytes;
        long growth = 0;
        for (SequenceChunk chunk : batch) {
            SequenceCache cache = caches.get(chunk.sequenceId());
            int reach = chunk.position() + chunk.numTokens();
            long needed = cache == null ? Math.max(newCacheBytes(reach), reservedBytes(chunk.reservePositions()))
                    : Math.max(0, cache.bytesFor(reach) - cache.accountedBytes());
            long alone = cache == null ? needed : cache.accountedBytes() + needed;
            if (alone > kvCacheBudget) {
                throw new CacheBudgetExceededException("sequence '" + chunk.sequenceId() + "' needs " + ByteSize.human(alone)
                        + " of KV cache on layers [" + spec.layerStart() + ", " + spec.layerEnd()
                        + "), more than this worker's whole budget of " + ByteSize.human(kvCacheBudget)
                        + " (butterfly.worker.kv-cache-budget): ask for fewer tokens", true);
            }
            growth += needed;
        }
        while (growth > 0 && prefixes != null && held + prefixes.bytes() + growth > kvCacheBudget
                && prefixes.evictOldest()) {
            // blocks of the prefix cache give way to sequences, the least recently used first
        }
        held += prefixes == null ? 0 : prefixes.bytes();
        if (growth > 0 && held + growth > kvCacheBudget) {
            throw new CacheBudgetExceededException("the KV caches of layers [" + spec.layerStart() + ", " + spec.layerEnd()
                    + ") would need " + ByteSize.human(held + growth) + " for this step, over this worker's budget of "
                    + ByteSize.human(kvCacheBudget) + " (" + caches.size() + (caches.size() == 1 ? " sequence" : " sequences")
                    + " cached, holding " + ByteSize.human(held) + "); retry once other sequences finish", false);
        }
    }

    /** What a new sequence's cache takes for {@code positions}, as {@link SequenceCache} would grow it. */
    private long newCacheBytes(int positions) {
        return KvCacheSizing.capacityFor(0, positions, spec.config().maxPositions()) * bytesPerPosition();
    }

    /** The most a sequence's cache can grow to while it stays within {@code reservePositions}. */
    private long reservedBytes(int reservePositions) {
        return KvCacheSizing.reservedBytes(spec.config(), spec.numLayers(), spec.hasHead(), reservePositions);
    }

    private long bytesPerPosition() {
        return KvCacheSizing.stageBytesPerPosition(spec.config(), spec.numLayers(), spec.hasHead());
    }

    /** Memory all sequences' KV caches take now; read without waiting for a step (metrics). */
    @Override
    public long cachedBytes() {
        return cachedBytes;
    }

    /** Recounts the caches' memory after they changed (under this executor's lock). */
    private void recount() {
        long used = 0;
        long accounted = 0;
        for (SequenceCache cache : caches.values()) {
            used += cache.bytes();
            accounted += cache.accountedBytes();
        }
        cachedBytes = used + (prefixes == null ? 0 : prefixes.bytes());
        accountedBytes = accounted;
        cachedSequences = caches.size();
    }

    private NDArray hiddenStates(ByteBuffer littleEndian, int totalTokens) {
        Shape shape = new Shape(totalTokens, spec.config().hiddenSize());
        ByteBuffer bytes = littleEndian.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (ByteOrder.nativeOrder() != ByteOrder.LITTLE_ENDIAN) {
            float[] values = new float[bytes.remaining() / Float.BYTES];
            bytes.asFloatBuffer().get(values);
            return root.create(values, shape);
        }
        // A heap buffer is copied by the engine; a direct one is read in place during this step only.
        return root.create(bytes, shape, DataType.FLOAT32);
    }

    private StageResult noLogits() {
        return new StageResult(ByteBuffer.allocate(0).order(ByteOrder.LITTLE_ENDIAN),
                new long[]{0, spec.config().vocabSize()}, true);
    }

    private static StageResult toResult(NDArray values, boolean logits) {
        ByteBuffer nativeBytes = values.toByteBuffer().order(ByteOrder.nativeOrder());
        ByteBuffer out = ByteBuffer.allocate(nativeBytes.remaining()).order(ByteOrder.LITTLE_ENDIAN);
        FloatBuffer dst = out.asFloatBuffer();
        dst.put(nativeBytes.asFloatBuffer());
        return new StageResult(out, values.getShape().getShape(), logits);
    }

    @Override
    public synchronized void release(String sequenceId) {
        if (!dropCache(sequenceId)) {
            releasedUnseen.put(sequenceId, Boolean.TRUE);
        }
        recount();
    }

    /** Frees a sequence's cache; false if it had none. */
    private boolean dropCache(String sequenceId) {
        lastUsed.remove(sequenceId);
        SequenceCache cache = caches.remove(sequenceId);
        if (cache == null) {
            return false;
        }
        cache.close();
        return true;
    }

    /**
     * Frees the caches of sequences that ran no step for {@code idleNanos}: their coordinator gave up long ago
     * (it failed over, or a release never arrived), and nothing else would ever free them.
     *
     * @return the sequences evicted
     */
    public synchronized List<String> evictIdle(long idleNanos) {
        long now = System.nanoTime();
        List<String> idle = lastUsed.entrySet().stream().filter(e -> now - e.getValue() > idleNanos)
                .map(Map.Entry::getKey).toList();
        idle.forEach(this::dropCache);
        recount();
        return idle;
    }

    @Override
    public long answeredTokens() {
        return answeredTokens;
    }

    @Override
    public PrefixCacheStats prefixCacheStats() {
        return prefixes == null ? PrefixCacheStats.OFF : new PrefixCacheStats(true, prefixes.blocks(),
                prefixes.bytes(), prefixes.queriedTokens(), prefixes.hitTokens(), prefixes.evictions());
    }

    @Override
    public int cachedSequences() {
        return cachedSequences;
    }

    /** Positions cached for a sequence on this stage, 0 if unknown. */
    public synchronized int cachedLength(String sequenceId) {
        SequenceCache cache = caches.get(sequenceId);
        return cache == null ? 0 : cache.length();
    }

    /** Native arrays currently held (weights, caches and anything a step failed to free); for leak checks. */
    synchronized int liveArrays() {
        return root.getManagedArrays().size();
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        synchronized (expertLock) { // not while an expert group computes
            closed = true;
            caches.values().forEach(SequenceCache::close);
            caches.clear();
            if (prefixes != null) {
                prefixes.close();
            }
            lastUsed.clear();
            recount();
            model.close();
            root.close();
        }
    }
}
