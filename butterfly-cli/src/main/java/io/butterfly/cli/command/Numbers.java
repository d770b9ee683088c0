package io.butterfly.cli.command;

import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Number options as the tools read them: whole numbers for integers (not {@code 1.5}), finite numbers for reals
 * (not {@code NaN} or {@code Infinity}, which {@link Double#parseDouble} accepts). A refusal names the value, and
 * {@link UsageErrors} puts the option's name in front: {@code --max-tokens must be an integer, got 'abc'}.
 */
final class Numbers {

    private Numbers() {
    }

    static void register(CommandLine line) {
        ITypeConverter<Integer> integer = Numbers::toInt;
        ITypeConverter<Long> whole = Numbers::toLong;
        ITypeConverter<Double> real = Numbers::toDouble;
        line.registerConverter(Integer.class, integer).registerConverter(int.class, integer)
                .registerConverter(Long.class, whole).registerConverter(long.class, whole)
                .registerConverter(Double.class, real).registerConverter(double.class, real);
    }

    static int toInt(String value) {
        long v = toLong(value);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new TypeConversionException("is out of range, got '" + value + "'");
        }
        return (int) v;
    }

    static long toLong(String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new TypeConversionException("must be an integer, got '" + value + "'");
        }
    }

    static double toDouble(String value) {
        try {
            double d = Double.parseDouble(value);
            if (Double.isFinite(d)) {
                return d;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new TypeConversionException("must be a number, got '" + value + "'");
    }
}
