package io.butterfly.cli.cluster;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The JVM options of the services {@code up} starts.
 *
 * <p>Services run long: they get the full JIT (C2), less what does not pay for itself (short tools stop at C1).
 * Not used: ten times lower compile thresholds for the per-step packages ({@code -XX:CompileCommand=
 * CompileThresholdScaling,io.grpc.*::*,0.1} and likewise io.netty, protobuf, ai.djl, io.butterfly) get a pipeline
 * step's path to C2 minutes sooner (decode 5-10% faster after the bench's 60 s warm-up, split/single ratio
 * unchanged) but add ~1.5 s of compilation to a cold bootstrap (bench-load 5.5-6.3 s -> 6.6-9.1 s to READY).
 *
 * <p>The control plane's throughput does not come from JIT-compiled Java, and its C2 compilations (Netty's write
 * path alone took ~1.5 s) ran during the bootstrap, on the cores the workers load with. So discovery stops at C1,
 * and the registry keeps C2 only for the digest and checksum code it hashes weights with (SHA-256 runs 8x slower
 * as C1 code). Measured with {@code bench-load}, 4 rounds each: services start 15.2-18.1 -> 13.2-15.2 s, bootstrap
 * to READY 5.3-6.4 -> 4.5-5.4 s. The coordinator and the workers keep the full JIT except for code that only runs while
 * a service starts (Spring, ASM, class loading, Tomcat, Jackson, logging): its C2 queue outlived the start-up and
 * compiled Spring and ASM methods during the bootstrap (a flight recording showed 1 s compiles). 3 paired
 * bench-load rounds: bootstrap 3.7-4.1 -> 3.6-3.7 s, total cold start 14.8-15.1 -> 14.1-14.8 s. The coordinator
 * once kept C2 for sampling, tensor decoding and digests only (services started ~2 s sooner), but every token crosses
 * its gRPC, TLS, protobuf, Raft and engine code: at 4-bit decode speeds that path as C1 code cost 3.4-3.8 ms of
 * coordinator CPU a token against 1.4-2.1 ms compiled by C2 (one worker, Q4_0, 300-token generations, 2026-12-02).
 * Each module's C2 exclusions are its {@code compiler-directives.json}.
 */
public final class ServiceJvm {

    /**
     * What every JVM running the engine or a service starts with: DJL never downloads; libtorch as packaged; no full
     * collection for class metadata (at the default 21 MB threshold a worker loading its first stage ran one or two
     * serial full GCs of 0.3-0.8 s on the loaded machine, in a spare's load and so in a recovering request's stall).
     */
    public static final List<String> COMMON =
            List.of("-XX:+UseSerialGC", "-XX:MetaspaceSize=256m", "-Dai.djl.offline=true",
                    "-Dai.djl.pytorch.graph_optimizer=false");

    private ServiceJvm() {
    }

    /** A module's options: the common ones, its JIT's, then {@code extra}. */
    static List<String> options(Path root, String module, List<String> extra) {
        List<String> options = new ArrayList<>(COMMON);
        if (module.equals("discovery-service")) {
            options.add("-XX:TieredStopAtLevel=1");
        } else {
            options.add("-XX:+UnlockDiagnosticVMOptions");
            options.add("-XX:CompilerDirectivesFile=" + root.resolve(module).resolve("compiler-directives.json"));
        }
        options.addAll(extra);
        return options;
    }

    /** {@code BUTTERFLY_JVM_OPTS}: added to every service JVM after the launcher's (e.g. -Xlog:gc or a flight recording). */
    static List<String> extraFromEnvironment() {
        String extra = System.getenv("BUTTERFLY_JVM_OPTS");
        return extra == null || extra.isBlank() ? List.of() : Arrays.asList(extra.strip().split("\\s+"));
    }
}
