/**
 * The benchmarks: decode tokens/s ({@code bench}), serving under concurrent requests ({@code bench-serve}), cold
 * load ({@code bench-load}), failure detection ({@code bench-detect}) and coordinator failover
 * ({@code bench-failover}).
 */
package io.butterfly.cli.bench;
