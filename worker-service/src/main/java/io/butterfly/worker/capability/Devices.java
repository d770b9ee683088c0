package io.butterfly.worker.capability;

import ai.djl.Device;
import ai.djl.engine.Engine;
import java.util.Locale;

/** Resolves the worker's {@code device} setting: "cpu", "gpu:N" or "auto" (a GPU if present). */
public final class Devices {

    private Devices() {
    }

    public static Device resolve(String setting) {
        String s = setting == null ? "auto" : setting.trim().toLowerCase(Locale.ROOT);
        if (s.equals("cpu")) {
            return Device.cpu();
        }
        if (s.equals("auto")) {
            return Engine.getInstance().getGpuCount() > 0 ? Device.gpu(0) : Device.cpu();
        }
        if (s.startsWith("gpu")) {
            int index = s.contains(":") ? Integer.parseInt(s.substring(s.indexOf(':') + 1)) : 0;
            int gpus = Engine.getInstance().getGpuCount();
            if (index < 0 || index >= gpus) {
                throw new IllegalArgumentException("device '" + setting + "' requested but " + gpus + " GPU(s) are visible");
            }
            return Device.gpu(index);
        }
        throw new IllegalArgumentException("device must be cpu, gpu:N or auto, not '" + setting + "'");
    }
}
