/**
 * The mutual-TLS material of a cluster started here: the cluster CA and each service's certificate, issued on first
 * use ({@code ./butterfly up} and the integration tests' clusters alike).
 */
package io.butterfly.cli.tls;
