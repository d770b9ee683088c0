package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.IValue;
import java.util.ArrayList;
import java.util.List;

/** The arguments made for one {@link TorchScript} call, freed together once it returned. */
final class ScriptArgs implements AutoCloseable {

    private final List<IValue> made = new ArrayList<>();

    private IValue keep(IValue v) {
        made.add(v);
        return v;
    }

    IValue tensor(NDArray a) {
        return keep(IValue.from((PtNDArray) a));
    }

    /** A {@code List[Tensor]}. */
    IValue tensors(NDArray... arrays) {
        PtNDArray[] pt = new PtNDArray[arrays.length];
        for (int i = 0; i < arrays.length; i++) {
            pt[i] = (PtNDArray) arrays[i];
        }
        return keep(IValue.listFrom(pt));
    }

    /** A {@code List[int]}. */
    IValue ints(long... values) {
        return keep(IValue.listFrom(values));
    }

    /** A {@code float} (a double in TorchScript). */
    IValue number(double value) {
        return keep(IValue.from(value));
    }

    IValue integer(long value) {
        return keep(IValue.from(value));
    }

    @Override
    public void close() {
        made.forEach(IValue::close);
        made.clear();
    }
}
