package io.butterfly.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The tools' entry point: its commands, and the command lines refused before anything starts. */
class ButterflyTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int run(String... args) {
        CommandLine line = Butterfly.commandLine();
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        return line.execute(args);
    }

    @Test
    void helpListsEveryCommand() {
        assertThat(run("help")).isZero();
        assertThat(out.toString()).contains("usage: ./butterfly").contains("demo", "up", "down", "ps", "status",
                "generate", "model", "keygen", "bench", "bench-detect", "bench-failover", "bench-load", "bench-serve", "build",
                "fault-schedule", "soak", "jobs", "bench-jobs");
        out.getBuffer().setLength(0);
        assertThat(run()).isZero();
        assertThat(out.toString()).contains("bench-failover");
    }

    @Test
    void helpOfACommandShowsItsOptions() {
        assertThat(run("help", "up")).isZero();
        assertThat(out.toString()).contains("--workers=N", "--coordinators=1-3", "--planner", "--worker-memory", "--transfer");
        out.getBuffer().setLength(0);
        assertThat(run("model", "generate", "--help")).isZero();
        assertThat(out.toString()).contains("--preset=NAME", "--rope-scaling=S");
    }

    @Test
    void anUnknownCommandIsNamedAndTheCommandsListed() {
        assertThat(run("frobnicate")).isEqualTo(2);
        assertThat(err.toString()).startsWith("error: unknown command 'frobnicate'").contains("bench-load");
    }

    @Test
    void commandsWithoutArgumentsRefuseThem() {
        assertThat(run("down", "now")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: down takes no arguments (got: now)" + System.lineSeparator());
    }

    @Test
    void upChecksItsOptionsBeforeStartingAnything() {
        String[][] cases = {
                {"--workers", "0"}, {"--workers", "100"}, {"--workers", "01"}, {"--coordinators", "4"},
                {"--planner", "greedy"}, {"--transfer", "nfs"}};
        String[] messages = {
                "--workers must be a number from 1 to 99", "--workers must be a number from 1 to 99",
                "--workers must be a number from 1 to 99", "--coordinators must be 1, 2 or 3",
                "--planner must be capacity-weighted or optimal, not 'greedy'", "--transfer must be shared or stream, not 'nfs'"};
        for (int i = 0; i < cases.length; i++) {
            err.getBuffer().setLength(0);
            String[] args = new String[cases[i].length + 1];
            args[0] = "up";
            System.arraycopy(cases[i], 0, args, 1, cases[i].length);
            assertThat(run(args)).as(String.join(" ", args)).isEqualTo(2);
            assertThat(err.toString()).isEqualTo("error: " + messages[i] + System.lineSeparator());
        }
    }

    @Test
    void faultScheduleAndSoakCheckTheirOptionsBeforeStartingAnything() {
        assertThat(run("fault-schedule", "--schedules", "0")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: --schedules 1-1000, --faults 1-100, --clients 1-64, --tokens >= 2"
                + System.lineSeparator());
        err.getBuffer().setLength(0);
        assertThat(run("soak", "--duration", "an hour")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: --duration must be a number and s, m or h (90s, 20m, 1h), not 'an hour'"
                + System.lineSeparator());
        err.getBuffer().setLength(0);
        assertThat(run("soak", "--kill-every", "5s")).isEqualTo(2);
        assertThat(err.toString()).startsWith("error: --clients >= 1");
        err.getBuffer().setLength(0);
        assertThat(run("soak", "--end-by", "six")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: --end-by must be a time of day in UTC (17:50), not 'six'"
                + System.lineSeparator());
    }

    @Test
    void benchLoadChecksItsRounds() {
        assertThat(run("bench-load", "--rounds", "0")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: --rounds must be a number from 1 to 99" + System.lineSeparator());
    }

    @Test
    void benchJobsChecksItsOptionsBeforeStartingAnything() {
        String[][] cases = {{"--clients", "0"}, {"--concurrency", "257"}, {"--seconds", "0"}, {"--job-tokens", "0"},
                {"--batch-size", "300"}, {"--workers", "0"}};
        String[] messages = {"--clients must be a number from 1 to 256", "--concurrency must be a number from 1 to 256",
                "--seconds must be at least 1 and --warmup-seconds not negative",
                "--output-tokens and --job-tokens must be numbers from 1 to 1024",
                "--prompt-tokens and --samples must be at least 1, --batch-size 1 to 256",
                "--workers must be a number from 1 to 99"};
        for (int i = 0; i < cases.length; i++) {
            err.getBuffer().setLength(0);
            String[] args = new String[cases[i].length + 1];
            args[0] = "bench-jobs";
            System.arraycopy(cases[i], 0, args, 1, cases[i].length);
            assertThat(run(args)).as(String.join(" ", args)).isEqualTo(2);
            assertThat(err.toString()).isEqualTo("error: " + messages[i] + System.lineSeparator());
        }
    }

    @Test
    void benchServeChecksItsOptionsBeforeStartingAnything() {
        String[][] cases = {
                {"--concurrency", "1,0"}, {"--pin", "--concurrency", "1,16"}, {"--output-tokens", "0"},
                {"--requests", "0"}, {"--pin", "--rounds", "0"}, {"--workers", "0"}};
        String[] messages = {
                "--concurrency must be a list of numbers from 1 to 256", "--pin compares one concurrency level (default 16)",
                "--output-tokens must be a number from 1 to 1024", "--requests must be at least 1",
                "--rounds must be a number from 1 to 99", "--workers must be a number from 1 to 99"};
        for (int i = 0; i < cases.length; i++) {
            err.getBuffer().setLength(0);
            String[] args = new String[cases[i].length + 1];
            args[0] = "bench-serve";
            System.arraycopy(cases[i], 0, args, 1, cases[i].length);
            assertThat(run(args)).as(String.join(" ", args)).isEqualTo(2);
            assertThat(err.toString()).isEqualTo("error: " + messages[i] + System.lineSeparator());
        }
    }

    @Test
    void modelNeedsItsSubcommand() {
        assertThat(run("model")).isEqualTo(2);
        assertThat(err.toString()).startsWith("error: model needs a subcommand: generate").contains("usage: ./butterfly model");
    }
}
