/**
 * The coordinator's REST API from the command line: {@code status}, {@code generate}.
 */
package io.butterfly.cli.client;
