package io.butterfly.cli.bench;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One JOBS client of {@code bench-jobs} (docs/jobs.md, the protocol as implemented), as a trainer would run: over
 * one plaintext connection it asks for any batch of the current step, answers it with a RESULT and asks again; when
 * the step is complete (ERROR 13) it moves every client to the next step, and when every batch left is leased
 * (ERROR 9) it asks again shortly. It counts the samples and batches that arrive.
 */
final class JobsPuller implements Runnable {

    static final long ANY_POSITION = -1L;
    private static final byte[] MAGIC = "JOBS".getBytes(StandardCharsets.US_ASCII);
    private static final int JOB_REQUEST = 0;
    private static final int RESULT = 1;
    private static final int JOB_RESPONSE = 2;
    private static final int ERROR = 3;
    private static final int RESULT_ACK = 4;
    private static final int UNAVAILABLE = 9;
    private static final int STEP_COMPLETE = 13;
    private static final byte[] RESULT_BYTES = "bench".getBytes(StandardCharsets.US_ASCII);

    private final String host;
    private final int port;
    private final long seed;
    /** The step every client of the run asks for; the first to see it complete moves it on. */
    private final AtomicLong step;
    private final AtomicLong samples;
    private final AtomicLong batches;
    private volatile boolean running = true;
    private volatile Socket socket;
    private volatile String failure;

    /**
     * @param samples where the samples received are added (shared by the run's clients)
     * @param batches where the batches received are added
     */
    JobsPuller(String host, int port, long seed, AtomicLong step, AtomicLong samples,
               AtomicLong batches) {
        this.host = host;
        this.port = port;
        this.seed = seed;
        this.step = step;
        this.samples = samples;
        this.batches = batches;
    }

    @Override
    public void run() {
        try (Socket s = new Socket(host, port)) {
            socket = s;
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            while (running) {
                long current = step.get();
                write(out, JOB_REQUEST, ByteBuffer.allocate(24).putLong(seed).putLong(current).putLong(ANY_POSITION)
                        .array());
                Frame answer = read(in);
                if (answer.opcode == JOB_RESPONSE) {
                    ByteBuffer p = ByteBuffer.wrap(answer.payload);
                    long answeredStep = p.getLong(8);
                    long position = p.getLong(16);
                    int count = p.getInt(28);
                    samples.addAndGet(count);
                    batches.incrementAndGet();
                    write(out, RESULT, ByteBuffer.allocate(28 + RESULT_BYTES.length).putLong(seed).putLong(answeredStep)
                            .putLong(position).putInt(RESULT_BYTES.length).put(RESULT_BYTES).array());
                    Frame ack = read(in);
                    if (ack.opcode != RESULT_ACK) {
                        throw new IOException("a RESULT answered with " + describe(ack));
                    }
                } else if (answer.opcode == ERROR && errorCode(answer) == STEP_COMPLETE) {
                    step.compareAndSet(current, current + 1);
                } else if (answer.opcode == ERROR && errorCode(answer) == UNAVAILABLE) {
                    Thread.sleep(50); // every batch left of the step is leased: ask again shortly
                } else {
                    throw new IOException("a JOB_REQUEST answered with " + describe(answer));
                }
            }
        } catch (IOException e) {
            if (running) {
                failure = e.toString();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the client: the connection is closed, so a read waiting for a batch ends. */
    void stop() {
        running = false;
        Socket s = socket;
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closed already
            }
        }
    }

    /** Why the client stopped on its own, or null. */
    String failure() {
        return failure;
    }

    private record Frame(int opcode, byte[] payload) {
    }

    private static void write(DataOutputStream out, int opcode, byte[] payload) throws IOException {
        out.write(MAGIC);
        out.writeByte(1);
        out.writeByte(opcode);
        out.writeInt(payload.length);
        out.write(payload);
        out.flush();
    }

    private static Frame read(DataInputStream in) throws IOException {
        byte[] header = new byte[10];
        in.readFully(header);
        ByteBuffer h = ByteBuffer.wrap(header);
        if (h.getInt(0) != ByteBuffer.wrap(MAGIC).getInt() || header[4] != 1) {
            throw new IOException("not a JOBS frame");
        }
        int length = h.getInt(6);
        if (length < 0 || length > 64 << 20) {
            throw new IOException("a frame of " + Integer.toUnsignedString(length) + " bytes");
        }
        byte[] payload = new byte[length];
        in.readFully(payload);
        return new Frame(header[5], payload);
    }

    private static int errorCode(Frame error) {
        return error.payload.length >= 2 ? ByteBuffer.wrap(error.payload).getShort(0) & 0xFFFF : -1;
    }

    private static String describe(Frame f) {
        if (f.opcode == ERROR && f.payload.length >= 2) {
            return "ERROR " + errorCode(f) + ": " + new String(f.payload, 2, f.payload.length - 2,
                    StandardCharsets.UTF_8);
        }
        return "opcode " + f.opcode;
    }
}
