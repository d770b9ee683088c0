/**
 * The coordinator's REST API from the command line: {@code status}, {@code generate}, {@code chat}.
 */
package io.butterfly.cli.client;
