package io.butterfly.coordinator.api.jobs;

import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.jobs.JobsProtocol;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.net.InetSocketAddress;
import javax.net.ssl.SSLException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coordinator's JOBS listener (docs/jobs.md): a TCP port speaking the JOBS protocol, on Netty's event loop (one
 * thread for every connection, none per connection, none waiting for a batch). With the cluster's TLS on, it is mutual
 * TLS with the cluster CA: a client shows a certificate the CA issued (that is how a node authenticates); plaintext
 * when the cluster runs without TLS, or when {@code butterfly.coordinator.jobs.plaintext} says so.
 */
public final class JobsServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(JobsServer.class);

    private final EventLoopGroup loop;
    private final Channel channel;

    private JobsServer(EventLoopGroup loop, Channel channel) {
        this.loop = loop;
        this.channel = channel;
    }

    /**
     * @param tls        the cluster's TLS, or null for plaintext
     * @param maxPayload the largest frame payload read, in bytes; a larger one is refused from its header
     */
    public static JobsServer start(String host, int port, ClusterTls tls, int maxPayload, JobsProtocol protocol) {
        SslContext ssl = tls == null || !tls.enabled() ? null : sslContext(tls);
        EventLoopGroup loop = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            Channel channel = new ServerBootstrap().group(loop).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            if (ssl != null) {
                                ch.pipeline().addLast(ssl.newHandler(ch.alloc()));
                            }
                            ch.pipeline().addLast(new JobsFrameDecoder(maxPayload), new JobsConnection(protocol));
                        }
                    }).bind(host, port).syncUninterruptibly().channel();
            log.info("JOBS listening on {} ({})", channel.localAddress(), ssl == null ? "plaintext"
                    : "mutual TLS with the cluster CA");
            return new JobsServer(loop, channel);
        } catch (RuntimeException e) {
            loop.shutdownGracefully();
            throw e;
        }
    }

    private static SslContext sslContext(ClusterTls tls) {
        try {
            return SslContextBuilder.forServer(tls.keyManagers()).trustManager(tls.trustManagers())
                    .clientAuth(ClientAuth.REQUIRE).protocols("TLSv1.3").build();
        } catch (SSLException e) {
            throw new IllegalStateException("cannot serve JOBS over TLS: " + e.getMessage(), e);
        }
    }

    /** The port bound (the one asked for, or the one given for 0). */
    public int port() {
        return ((InetSocketAddress) channel.localAddress()).getPort();
    }

    @Override
    public void close() {
        channel.close().syncUninterruptibly();
        loop.shutdownGracefully().syncUninterruptibly();
    }
}
