#!/bin/sh
# Compiles the CPU kernels (libbutterfly_kernels.so) into directory $1 with the JNI headers of the JDK at $2.
# -ffp-contract=off: no multiply-add is fused unless the code says so, so the AVX2 and the portable kernels compute
# the same operations (bfk_kernels.c); the AVX2 ones are chosen at run time (__builtin_cpu_supports), so one build
# serves any x86-64 CPU.
set -eu
out="$1"
jdk="$2"
src="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
gcc -O3 -fPIC -shared -std=gnu11 -ffp-contract=off -fno-strict-aliasing -Wall -Wextra -Wno-unused-parameter -Werror \
  -I"$jdk/include" -I"$jdk/include/linux" \
  -o "$out/libbutterfly_kernels.so" \
  "$src/bfk_pool.c" "$src/bfk_kernels.c" "$src/bfk_q8.c" "$src/bfk_x8.c" "$src/bfk_stage.c" "$src/bfk_jni.c" -lm -lpthread
