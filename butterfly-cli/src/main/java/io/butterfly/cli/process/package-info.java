/**
 * Service processes: the supervisor that starts, lists, signals and stops them, and the images they run from
 * (extracted jars, class-data archives). The JDK alone: the integration tests start their services with it too.
 */
package io.butterfly.cli.process;
