/**
 * The model decoded whole in this process: the check the demo compares the cluster's answer with (on the
 * worker's engine) and the benchmark's plain DJL loop (shares no math with it).
 */
package io.butterfly.cli.reference;
