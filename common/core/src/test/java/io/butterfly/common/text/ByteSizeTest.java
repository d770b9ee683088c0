package io.butterfly.common.text;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class ByteSizeTest {

    @Test
    void eachSizeReadsInTheLargestUnitItReaches() {
        assertEquals("0 bytes", ByteSize.human(0));
        assertEquals("1023 bytes", ByteSize.human(1023));
        assertEquals("1.0 KiB", ByteSize.human(1024));
        assertEquals("100.0 KiB", ByteSize.human(100 * 1024));
        assertEquals("1.5 MiB", ByteSize.human(3L * 1024 * 1024 / 2));
        assertEquals("2.0 GiB", ByteSize.human(2L << 30));
        assertEquals("1024.0 GiB", ByteSize.human(1L << 40));
    }
}
