package io.butterfly.common.text;

import java.util.Locale;

/** Byte counts as people read them in error messages and logs. */
public final class ByteSize {

    private ByteSize() {
    }

    /** {@code bytes} in the largest binary unit it reaches, one decimal: "512 bytes", "100.0 KiB", "1.5 GiB". */
    public static String human(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        if (bytes >= 1L << 10) {
            return String.format(Locale.ROOT, "%.1f KiB", bytes / (double) (1L << 10));
        }
        return bytes + " bytes";
    }
}
