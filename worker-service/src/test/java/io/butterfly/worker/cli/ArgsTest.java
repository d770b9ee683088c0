package io.butterfly.worker.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ArgsTest {

    private static final Args.Spec GENERATE = new Args.Spec("generate",
            Set.of("max-tokens", "temperature", "seed"), Set.of("json"));

    private static Args parse(String... args) {
        return Args.parse(args, 0, GENERATE);
    }

    @Test
    void aFlagTakesNoValueSoTheNextArgumentStaysPositional() {
        Args a = parse("--json", "some text");
        assertThat(a.has("json")).isTrue();
        assertThat(a.positional()).containsExactly("some text");
    }

    @Test
    void aFlagGivenAValueIsAnError() {
        assertThatThrownBy(() -> parse("--json=yes", "x"))
                .isInstanceOf(Args.UsageException.class).hasMessage("--json takes no value");
    }

    @Test
    void valuedOptionsTakeTheNextArgumentOrTheTextAfterEquals() {
        Args a = parse("hello", "--max-tokens", "3", "--seed=-7", "--temperature", "-0.5", "world");
        assertThat(a.intOption("max-tokens", 32)).isEqualTo(3);
        assertThat(a.longOption("seed", 0)).isEqualTo(-7);
        assertThat(a.doubleOption("temperature", 0)).isEqualTo(-0.5);
        assertThat(a.positional()).containsExactly("hello", "world");
    }

    @Test
    void absentOptionsFallBack() {
        Args a = parse("x");
        assertThat(a.intOption("max-tokens", 32)).isEqualTo(32);
        assertThat(a.doubleOption("temperature", 0.7)).isEqualTo(0.7);
        assertThat(a.has("json")).isFalse();
    }

    @Test
    void aValuedOptionWithoutItsValueIsAnError() {
        assertThatThrownBy(() -> parse("x", "--max-tokens"))
                .isInstanceOf(Args.UsageException.class).hasMessage("--max-tokens needs a value");
        assertThatThrownBy(() -> parse("x", "--max-tokens", "--json"))
                .isInstanceOf(Args.UsageException.class).hasMessage("--max-tokens needs a value");
    }

    @Test
    void anUnknownOptionIsRejectedNamingTheCommand() {
        assertThatThrownBy(() -> parse("x", "--max-token", "3"))
                .isInstanceOf(Args.UsageException.class).hasMessage("unknown option --max-token for generate");
        assertThatThrownBy(() -> parse("--verbose"))
                .isInstanceOf(Args.UsageException.class).hasMessage("unknown option --verbose for generate");
    }

    @Test
    void afterADoubleDashEverythingIsPositional() {
        Args a = parse("--seed", "1", "--", "--json", "--not-an-option");
        assertThat(a.has("json")).isFalse();
        assertThat(a.positional()).isEqualTo(List.of("--json", "--not-an-option"));
    }

    @Test
    void aMalformedNumberIsAUsageErrorNamingTheOption() {
        assertThatThrownBy(() -> parse("--max-tokens", "abc").intOption("max-tokens", 32))
                .isInstanceOf(Args.UsageException.class).hasMessage("--max-tokens must be an integer, got 'abc'");
        assertThatThrownBy(() -> parse("--seed", "1.5").longOption("seed", 0))
                .isInstanceOf(Args.UsageException.class).hasMessage("--seed must be an integer, got '1.5'");
        assertThatThrownBy(() -> parse("--max-tokens", "99999999999").intOption("max-tokens", 32))
                .isInstanceOf(Args.UsageException.class).hasMessage("--max-tokens is out of range, got '99999999999'");
        assertThatThrownBy(() -> parse("--temperature", "warm").doubleOption("temperature", 0))
                .isInstanceOf(Args.UsageException.class).hasMessage("--temperature must be a number, got 'warm'");
        assertThatThrownBy(() -> parse("--temperature", "NaN").doubleOption("temperature", 0))
                .isInstanceOf(Args.UsageException.class).hasMessage("--temperature must be a number, got 'NaN'");
    }
}
