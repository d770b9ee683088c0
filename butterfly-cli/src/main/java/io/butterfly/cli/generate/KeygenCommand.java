package io.butterfly.cli.generate;

import io.butterfly.cli.command.Commands;
import io.butterfly.cli.command.ShowsUsageOnError;
import io.butterfly.common.crypto.NodeIdentity;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code keygen --out DIR}: writes a new Ed25519 identity ({@code identity.key}, PKCS#8, owner-only;
 * {@code identity.pub}, hex) and prints its public key. For a registry publisher key provisioned ahead of the
 * registry's first start (a Kubernetes Secret), so that coordinators and workers can be configured to trust
 * it. Never overwrites an existing key.
 */
@Command(name = "keygen", description = "new Ed25519 publisher key (identity.key/.pub) for a registry on Kubernetes;"
        + " prints the public key")
public final class KeygenCommand implements Callable<Integer>, ShowsUsageOnError {

    @Spec
    CommandSpec spec;

    @Option(names = "--out", paramLabel = "DIR", description = "where to write it (must not hold an identity.key yet)")
    Path out;

    @Override
    public Integer call() {
        if (out == null || out.toString().isBlank()) {
            throw Commands.usageError(spec, "--out DIR is required");
        }
        PrintWriter err = spec.commandLine().getErr();
        if (Files.exists(out.resolve(NodeIdentity.PRIVATE_FILE))) {
            err.println("keygen: " + out.resolve(NodeIdentity.PRIVATE_FILE) + " exists already; not overwriting it");
            return 2;
        }
        try {
            spec.commandLine().getOut().println(NodeIdentity.loadOrCreate(out).publicKeyHex());
            return 0;
        } catch (UncheckedIOException e) {
            err.println("keygen: " + e.getMessage() + ": " + e.getCause().getMessage());
            return 1;
        }
    }
}
