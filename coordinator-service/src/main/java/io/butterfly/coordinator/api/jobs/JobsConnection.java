package io.butterfly.coordinator.api.jobs;

import io.butterfly.coordinator.jobs.JobsProtocol;
import io.butterfly.coordinator.jobs.wire.FrameException;
import io.butterfly.coordinator.jobs.wire.JobsCodec;
import io.butterfly.coordinator.jobs.wire.JobsMessage;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client connection: each frame is answered by the {@link JobsProtocol}, in the order the frames came, one at a
 * time (the connection stops reading while a batch is generated, so a client cannot queue unbounded work); a refused
 * frame is answered with its ERROR, and the connection closes after it when the framing is lost. No thread waits for
 * a batch: the answer is written when its generation completes.
 */
final class JobsConnection extends ChannelInboundHandlerAdapter {

    private static final Logger log = LoggerFactory.getLogger(JobsConnection.class);

    private final JobsProtocol protocol;
    /** The previous frame's answer, written; the next is written after it. */
    private CompletableFuture<Void> written = CompletableFuture.completedFuture(null);

    JobsConnection(JobsProtocol protocol) {
        this.protocol = protocol;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object frame) {
        if (frame instanceof FrameException refused) {
            send(ctx, CompletableFuture.completedFuture(refused.toMessage()), refused.error().closes());
        } else {
            send(ctx, protocol.answer((JobsMessage) frame, ctx.channel().id().asShortText()), false);
        }
    }

    private void send(ChannelHandlerContext ctx, CompletableFuture<JobsMessage> answer, boolean thenClose) {
        ctx.channel().config().setAutoRead(false);
        written = written.thenCombine(answer, (previous, reply) -> reply).thenAccept(reply -> {
            var write = ctx.writeAndFlush(Unpooled.wrappedBuffer(JobsCodec.encode(reply)));
            if (thenClose) {
                write.addListener(ChannelFutureListener.CLOSE);
            } else {
                ctx.channel().config().setAutoRead(true);
            }
        }).exceptionally(failure -> {
            log.warn("JOBS connection {}: answer failed, closing: {}", ctx.channel().remoteAddress(), failure.toString());
            ctx.close();
            return null;
        });
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        log.debug("JOBS connection {} closed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }
}
