/**
 * HTTP for short-lived tool JVMs (no {@code java.net.http} selector thread to wait for at exit).
 */
package io.butterfly.cli.http;
