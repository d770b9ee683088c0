/**
 * Picocli as every command uses it: one way to read numbers and report usage errors, failures reported in one
 * line, the launcher's own log lines.
 */
package io.butterfly.cli.command;
