/** {@code ./butterfly jobs}: batch jobs over the coordinator's REST API (docs/jobs.md). */
package io.butterfly.cli.jobs;
