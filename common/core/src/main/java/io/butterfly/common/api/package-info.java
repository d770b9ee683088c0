/**
 * The services' REST answers as records: the server writes them, the CLI and the tests read them, so a field is named
 * in one place. Field names are snake_case on the wire, as docs/api.md lists them.
 */
package io.butterfly.common.api;
