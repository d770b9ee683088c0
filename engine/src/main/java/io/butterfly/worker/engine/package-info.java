/**
 * The worker's model execution engine: one partition (a contiguous half-open layer range, plus the
 * embedding on the first stage and the final norm and LM head on the last) of a Llama-family or GPT-2
 * model, run with DJL on the PyTorch engine in float32.
 *
 * <ul>
 *   <li>{@link io.butterfly.worker.engine.DjlPartitionExecutor} executes packed batches of sequences
 *       (prefill and decode alike) and keeps each sequence's KV cache for its own layers.</li>
 *   <li>Splitting is exact: the same model over 1, 2, 3 or 4 stages gives the same logits bit for bit,
 *       hidden states crossing stages as little-endian float32 (tested).</li>
 *   <li>Batching is exact up to float32 rounding only: the GEMM kernels round a row differently
 *       depending on how many rows share the call.</li>
 * </ul>
 */
package io.butterfly.worker.engine;
