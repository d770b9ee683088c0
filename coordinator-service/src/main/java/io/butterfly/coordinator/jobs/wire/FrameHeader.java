package io.butterfly.coordinator.jobs.wire;

/**
 * A frame's 10-byte header once checked: its opcode (possibly one this version does not know: its payload is still
 * read, and answered with UNKNOWN_OPCODE) and its payload's length.
 */
public record FrameHeader(int opcode, int payloadLength) {
}
