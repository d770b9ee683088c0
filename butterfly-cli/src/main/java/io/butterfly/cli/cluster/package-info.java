/**
 * A cluster on this machine as {@code up} lays it out (ports, the services' JVM options), started, stopped and
 * listed: {@code up}, {@code down}, {@code ps}, {@code build}.
 */
package io.butterfly.cli.cluster;
