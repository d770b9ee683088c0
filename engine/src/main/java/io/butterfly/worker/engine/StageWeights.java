package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.IValue;
import java.util.ArrayList;
import java.util.List;

/**
 * A list of weights as a stage's TorchScript reads it ({@code weights} in llama.py and gpt2.py): tensors as loaded
 * (norms), and projections as the script's {@code prepare} made them from their {@code [out, in]} matrix (packed
 * for MKL, or in half precision), each followed by its bias or an empty tensor.
 *
 * <p>The prepared tensors may be of types DJL cannot describe (MKL-packed, bfloat16): they are only ever handed back
 * to the script, never operated on from Java.
 */
final class StageWeights {

    private final TorchScript script;
    private final NDManager manager;
    private final WeightDtype dtype;
    private final NDArray none;
    private final List<NDArray> arrays = new ArrayList<>();
    private long bytes;
    /** Where projections were loaded from, told when one has been copied (its file pages are not needed any more). */
    private WeightStore source;

    StageWeights(TorchScript script, NDManager manager, WeightDtype dtype) {
        this.script = script;
        this.manager = manager;
        this.dtype = dtype;
        this.none = manager.create(new float[0]);
    }

    /** A float32 tensor as loaded. */
    StageWeights add(NDArray tensor) {
        arrays.add(tensor);
        bytes += tensor.size() * Float.BYTES;
        return this;
    }

    /** A projection: weights {@code [out, in]}, consumed (closed once prepared), and its bias {@code [out]} or null. */
    StageWeights addProjection(NDArray outIn, NDArray bias) {
        addPrepared(outIn, bias);
        if (source != null && script.linear() != TorchScript.Linear.PLAIN) {
            source.releasePages(outIn); // prepared as a copy (reordered, packed or narrowed): the pages are done
        }
        outIn.close(); // the prepared form (or another handle on the same memory) stays
        return this;
    }

    /** Projections added from here on were loaded from {@code store}, which may then release their file pages. */
    StageWeights loadedFrom(WeightStore store) {
        this.source = store;
        return this;
    }

    /** A projection whose weights stay in use elsewhere (a tied head's embedding table). */
    StageWeights addSharedProjection(NDArray outIn, NDArray bias) {
        addPrepared(outIn, bias);
        return this;
    }

    private void addPrepared(NDArray outIn, NDArray bias) {
        try (ScriptArgs args = new ScriptArgs()) {
            for (NDArray prepared : script.callForArrays(manager, "prepare", args.tensor(outIn), args.integer(dtype.torchCode()))) {
                arrays.add(prepared);
            }
        }
        bytes += outIn.size() * dtype.bytes();
        if (bias != null) {
            add(bias);
        } else {
            arrays.add(none);
        }
    }

    int size() {
        return arrays.size();
    }

    /** Memory the weights take as held (a packed matrix counted as its float32 size). */
    long bytes() {
        return bytes;
    }

    /** The {@code List[Tensor]} to pass to the script; the caller closes it. */
    IValue toList() {
        return IValue.listFrom(arrays.stream().map(a -> (PtNDArray) a).toArray(PtNDArray[]::new));
    }
}
