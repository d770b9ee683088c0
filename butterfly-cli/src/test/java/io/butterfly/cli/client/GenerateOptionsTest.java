package io.butterfly.cli.client;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.command.Commands;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * How a command line is read, shown on {@code generate}: flags take no value, valued options take the next argument
 * or the text after '=', an option nobody declared is an error (a typo must not be ignored silently), everything
 * after {@code --} is the prompt, and a mistake is one {@code error:} line naming the option, exit code 2.
 */
class GenerateOptionsTest {

    private final StringWriter err = new StringWriter();

    private static GenerateCommand parse(String... args) {
        GenerateCommand command = new GenerateCommand();
        Commands.line(command).parseArgs(args);
        return command;
    }

    /** Runs a command line that must be refused before anything is sent; returns the error line. */
    private String refused(String... args) {
        err.getBuffer().setLength(0);
        CommandLine line = Commands.line(new GenerateCommand());
        line.setOut(new PrintWriter(Writer.nullWriter()));
        line.setErr(new PrintWriter(err, true));
        String[] withUrl = new String[args.length + 2];
        withUrl[0] = "--url";
        withUrl[1] = "http://127.0.0.1:9"; // the discard port: nothing may be sent
        System.arraycopy(args, 0, withUrl, 2, args.length);
        assertThat(line.execute(withUrl)).as(String.join(" ", args)).isEqualTo(2);
        return err.toString().lines().findFirst().orElse("");
    }

    @Test
    void aFlagTakesNoValueSoTheNextArgumentStaysPositional() {
        GenerateCommand c = parse("--json", "some text");
        assertThat(c.json).isTrue();
        assertThat(c.prompt).containsExactly("some text");
    }

    @Test
    void aFlagGivenAValueIsAnError() {
        assertThat(refused("--json=yes", "x")).isEqualTo("error: --json takes no value");
    }

    @Test
    void valuedOptionsTakeTheNextArgumentOrTheTextAfterEquals() {
        GenerateCommand c = parse("hello", "--max-tokens", "3", "--seed=-7", "--temperature", "-0.5", "world");
        assertThat(c.maxTokens).isEqualTo(3);
        assertThat(c.seed).isEqualTo(-7);
        assertThat(c.temperature).isEqualTo(-0.5);
        assertThat(c.prompt).containsExactly("hello", "world");
    }

    @Test
    void absentOptionsFallBack() {
        GenerateCommand c = parse("x");
        assertThat(c.maxTokens).isEqualTo(32);
        assertThat(c.temperature).isZero();
        assertThat(c.json).isFalse();
        assertThat(c.topP).isNull();
    }

    @Test
    void aLaterOptionOverridesAnEarlierOne() {
        assertThat(parse("x", "--max-tokens", "3", "--max-tokens", "5").maxTokens).isEqualTo(5);
    }

    @Test
    void aValuedOptionWithoutItsValueIsAnError() {
        assertThat(refused("x", "--max-tokens")).isEqualTo("error: --max-tokens needs a value");
        assertThat(refused("x", "--max-tokens", "--json")).isEqualTo("error: --max-tokens needs a value");
    }

    @Test
    void anUnknownOptionIsRejectedNamingTheCommand() {
        assertThat(refused("x", "--max-token", "3")).isEqualTo("error: unknown option --max-token for generate");
        assertThat(refused("--verbose")).isEqualTo("error: unknown option --verbose for generate");
    }

    @Test
    void afterADoubleDashEverythingIsPositional() {
        GenerateCommand c = parse("--seed", "1", "--", "--json", "--not-an-option");
        assertThat(c.json).isFalse();
        assertThat(c.prompt).containsExactly("--json", "--not-an-option");
    }

    @Test
    void aMalformedNumberIsAUsageErrorNamingTheOption() {
        assertThat(refused("x", "--max-tokens", "abc")).isEqualTo("error: --max-tokens must be an integer, got 'abc'");
        assertThat(refused("x", "--seed", "1.5")).isEqualTo("error: --seed must be an integer, got '1.5'");
        assertThat(refused("x", "--max-tokens", "99999999999")).isEqualTo("error: --max-tokens is out of range, got '99999999999'");
        assertThat(refused("x", "--temperature", "warm")).isEqualTo("error: --temperature must be a number, got 'warm'");
        assertThat(refused("x", "--temperature", "NaN")).isEqualTo("error: --temperature must be a number, got 'NaN'");
    }

    @Test
    void aPromptIsRequired() {
        assertThat(refused("--max-tokens", "3")).isEqualTo("error: generate needs TEXT");
    }
}
