/**
 * The tools' one entry point, {@code ./butterfly} ({@link io.butterfly.cli.Butterfly}), and the demo, which uses
 * most of the others.
 */
package io.butterfly.cli;
