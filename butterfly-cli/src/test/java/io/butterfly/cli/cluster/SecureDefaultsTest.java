package io.butterfly.cli.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.home.ClusterApiKeys;
import io.butterfly.cli.http.PlainHttp;
import io.butterfly.common.web.auth.ApiKeys;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 47, item 8: {@code ./butterfly up} is authenticated by default. Without key options it makes a user key and
 * an admin key under {@code .butterfly/keys} on first use (as it makes the cluster CA), readable by their owner only,
 * kept across runs, and starts the coordinators and the registry with them; {@code --no-auth} starts them without;
 * the client commands send the user key by themselves. Before, {@code up} set no keys and every endpoint was open.
 */
class SecureDefaultsTest {

    @TempDir
    Path root;

    @Test
    void upMakesAUserAndAnAdminKeyOnceAndTheServicesCheckThem() throws Exception {
        Launcher launcher = new Launcher(new ButterflyHome(root, root.resolve(".butterfly")), PortLayout.withOffset(0));
        assertThat(UpOptions.defaults().apiKeys()).isEqualTo(UpOptions.ApiKeyFiles.MADE);

        UpOptions.ApiKeyFiles made = launcher.apiKeys(UpOptions.ApiKeyFiles.MADE);
        Path keys = root.resolve(".butterfly/keys");
        assertThat(made.keys()).isEqualTo(keys.resolve(ClusterApiKeys.USER_FILE));
        assertThat(made.adminKeys()).isEqualTo(keys.resolve(ClusterApiKeys.ADMIN_FILE));
        assertThat(Files.getPosixFilePermissions(keys)).isEqualTo(PosixFilePermissions.fromString("rwx------"));
        assertThat(Files.getPosixFilePermissions(made.keys())).isEqualTo(PosixFilePermissions.fromString("rw-------"));
        assertThat(Files.getPosixFilePermissions(made.adminKeys())).isEqualTo(PosixFilePermissions.fromString("rw-------"));

        // The files are what the services read (one key a line): the user key may generate, the admin key more.
        ApiKeys checked = ApiKeys.load(made.keys(), made.adminKeys());
        String user = ClusterApiKeys.readKey(made.keys());
        String admin = ClusterApiKeys.readKey(made.adminKeys());
        assertThat(user).startsWith("sk-").hasSizeGreaterThan(40);
        assertThat(checked.roleOf(user)).isEqualTo(ApiKeys.Role.USER);
        assertThat(checked.roleOf(admin)).isEqualTo(ApiKeys.Role.ADMIN);
        assertThat(checked.roleOf("sk-guess")).isEqualTo(ApiKeys.Role.NONE);

        launcher.apiKeys(UpOptions.ApiKeyFiles.MADE);
        assertThat(ClusterApiKeys.readKey(made.keys())).as("kept across runs").isEqualTo(user);
        assertThat(launcher.apiKeys(UpOptions.ApiKeyFiles.NONE).none()).as("--no-auth").isTrue();
        Path mine = Files.writeString(root.resolve("mine.txt"), "sk-mine\n");
        assertThat(launcher.apiKeys(new UpOptions.ApiKeyFiles(mine, null)).keys()).as("the operator's own").isEqualTo(mine);
    }

    @Test
    void noAuthIsAnExplicitChoiceThatTakesNoKeyFiles() {
        var spec = new CommandLine(new UpCommand()).getCommandSpec();
        assertThat(UpCommand.apiKeyFiles(spec, false, null, null)).isEqualTo(UpOptions.ApiKeyFiles.MADE);
        assertThat(UpCommand.apiKeyFiles(spec, true, null, null)).isEqualTo(UpOptions.ApiKeyFiles.NONE);
        assertThatThrownBy(() -> UpCommand.apiKeyFiles(spec, true, root, null))
                .hasMessageContaining("--no-auth takes no --api-keys");
    }

    @Test
    void theClientCommandsSendTheUserKeyUpMade() throws Exception {
        assumeTrue(System.getenv("BUTTERFLY_API_KEY") == null && System.getenv("BUTTERFLY_HOME") == null,
                "the environment names a key or a home of its own");
        String before = System.getProperty("butterfly.root");
        System.setProperty("butterfly.root", root.toString());
        try {
            assertThat(PlainHttp.bearerKey()).as("no keys made yet").isNull();
            ClusterApiKeys.ensure(root.resolve(".butterfly/keys"));
            assertThat(PlainHttp.bearerKey()).isEqualTo(ClusterApiKeys.readKey(root.resolve(".butterfly/keys/user.key")));
        } finally {
            if (before == null) {
                System.clearProperty("butterfly.root");
            } else {
                System.setProperty("butterfly.root", before);
            }
        }
    }
}
