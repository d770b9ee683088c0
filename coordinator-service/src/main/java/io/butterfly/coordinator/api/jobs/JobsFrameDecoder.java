package io.butterfly.coordinator.api.jobs;

import io.butterfly.coordinator.jobs.wire.FrameException;
import io.butterfly.coordinator.jobs.wire.FrameHeader;
import io.butterfly.coordinator.jobs.wire.JobsCodec;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import java.util.List;

/**
 * Cuts a connection's bytes into JOBS frames with the pure {@link JobsCodec}: the 10-byte header is checked as soon
 * as it is in (magic, version, the payload's length against the maximum), so an oversized payload is refused before
 * any of it is buffered; then exactly the payload is read and decoded. Emits each {@code JobsMessage}, or the
 * {@link FrameException} that refuses a frame. After a refusal that {@link io.butterfly.coordinator.jobs.wire.WireError#closes()
 * loses the framing}, every further byte is dropped until the connection closes.
 */
final class JobsFrameDecoder extends ByteToMessageDecoder {

    private final int maxPayload;
    private FrameHeader header;
    private boolean lost;

    JobsFrameDecoder(int maxPayload) {
        this.maxPayload = maxPayload;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (lost) {
            in.skipBytes(in.readableBytes());
            return;
        }
        if (header == null) {
            if (in.readableBytes() < JobsCodec.HEADER_BYTES) {
                return;
            }
            byte[] bytes = new byte[JobsCodec.HEADER_BYTES];
            in.readBytes(bytes);
            try {
                header = JobsCodec.header(bytes, maxPayload);
            } catch (FrameException refused) {
                lost = true;
                in.skipBytes(in.readableBytes());
                out.add(refused);
                return;
            }
        }
        if (in.readableBytes() < header.payloadLength()) {
            return;
        }
        byte[] payload = new byte[header.payloadLength()];
        in.readBytes(payload);
        int opcode = header.opcode();
        header = null;
        try {
            out.add(JobsCodec.decode(opcode, payload));
        } catch (FrameException refused) {
            out.add(refused);
        }
    }
}
