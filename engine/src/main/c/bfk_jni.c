/*
 * JNI entry points of io.butterfly.worker.engine.cpu.NativeKernels. Addresses travel as jlong; the Java side checks
 * every size and offset before it calls, so nothing here reads or writes outside what it was given.
 */
#include "bfk.h"

#include <errno.h>
#include <jni.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#define JNI(name) Java_io_butterfly_worker_engine_cpu_NativeKernels_##name


#define PTR(a) ((void *) (intptr_t) (a))

JNIEXPORT jboolean JNICALL JNI(usesAvx2)(JNIEnv *env, jclass c) {
    return (jboolean) bfk_uses_avx2();
}

JNIEXPORT jboolean JNICALL JNI(hasAvx2)(JNIEnv *env, jclass c) {
    return (jboolean) bfk_has_avx2();
}

JNIEXPORT void JNICALL JNI(forcePortable)(JNIEnv *env, jclass c, jboolean on) {
    bfk_force_portable(on);
}

JNIEXPORT jint JNICALL JNI(vnniEncoding)(JNIEnv *env, jclass c) {
    return (jint) bfk_uses_vnni();
}

JNIEXPORT void JNICALL JNI(forceWithoutVnni)(JNIEnv *env, jclass c, jboolean on) {
    bfk_force_without_vnni(on);
}

JNIEXPORT jlong JNICALL JNI(poolCreate)(JNIEnv *env, jclass c, jint threads) {
    return (jlong) (intptr_t) bfk_pool_create(threads);
}

JNIEXPORT void JNICALL JNI(poolRest)(JNIEnv *env, jclass c, jlong pool) {
    bfk_pool_rest(PTR(pool));
}

JNIEXPORT void JNICALL JNI(poolDestroy)(JNIEnv *env, jclass c, jlong pool) {
    bfk_pool_destroy(PTR(pool));
}

JNIEXPORT jlong JNICALL JNI(stageCreate)(JNIEnv *env, jclass c, jint hidden, jint heads, jint kvHeads, jint inter,
                                         jint layers, jint maxPositions, jfloat eps) {
    return (jlong) (intptr_t) bfk_stage_create(hidden, heads, kvHeads, inter, layers, maxPositions, eps);
}

JNIEXPORT void JNICALL JNI(stageSetMatrix)(JNIEnv *env, jclass c, jlong stage, jint layer, jint slot, jint type,
                                           jint rows, jint cols, jlong address, jboolean interleaved) {
    bfk_stage_set_matrix(PTR(stage), layer, slot, type, rows, cols, PTR(address), interleaved);
}

JNIEXPORT void JNICALL JNI(stageSetHeadDim)(JNIEnv *env, jclass c, jlong stage, jint headDim) {
    bfk_stage_set_head_dim(PTR(stage), headDim);
}

JNIEXPORT void JNICALL JNI(stageSetQ8Activations)(JNIEnv *env, jclass c, jlong stage, jboolean on) {
    bfk_stage_set_q8_activations(PTR(stage), on);
}

JNIEXPORT void JNICALL JNI(stageSetVector)(JNIEnv *env, jclass c, jlong stage, jint layer, jint slot, jlong address) {
    bfk_stage_set_vector(PTR(stage), layer, slot, PTR(address));
}

JNIEXPORT void JNICALL JNI(stageDestroy)(JNIEnv *env, jclass c, jlong stage) {
    bfk_stage_destroy(PTR(stage));
}

/* seqs: per sequence (row, n, position, capacity); caches: per sequence the cache's address. */
/* The sequences' views for the stage calls: NULL if memory ran out (free it). */
static bfk_seq *views_of(JNIEnv *env, jintArray seqs, jlongArray caches, jsize nseq) {
    jint *s = (*env)->GetIntArrayElements(env, seqs, NULL);
    jlong *k = (*env)->GetLongArrayElements(env, caches, NULL);
    bfk_seq *views = malloc(sizeof(bfk_seq) * (size_t) (nseq > 0 ? nseq : 1));
    if (views) {
        for (jsize i = 0; i < nseq; i++) {
            views[i].row = s[4 * i];
            views[i].n = s[4 * i + 1];
            views[i].position = s[4 * i + 2];
            views[i].capacity = s[4 * i + 3];
            views[i].kv = PTR(k[i]);
        }
    }
    (*env)->ReleaseLongArrayElements(env, caches, k, JNI_ABORT);
    (*env)->ReleaseIntArrayElements(env, seqs, s, JNI_ABORT);
    return views;
}

/* first < 0: the whole stage; otherwise its layers [first, end) only. */
JNIEXPORT jint JNICALL JNI(stageForward)(JNIEnv *env, jclass c, jlong stage, jlong pool, jlong x, jint rows,
                                         jintArray seqs, jlongArray caches, jlong cos, jlong sin, jint first,
                                         jint end) {
    jsize nseq = (*env)->GetArrayLength(env, caches);
    bfk_seq *views = views_of(env, seqs, caches, nseq);
    int rc = -1;
    if (views) {
        rc = first < 0 ? bfk_stage_forward(PTR(stage), PTR(pool), PTR(x), rows, views, nseq, PTR(cos), PTR(sin))
                : bfk_stage_forward_layers(PTR(stage), PTR(pool), PTR(x), rows, views, nseq, PTR(cos), PTR(sin), first,
                                           end);
        free(views);
    }
    return rc;
}

JNIEXPORT jint JNICALL JNI(stageHalf)(JNIEnv *env, jclass c, jlong stage, jlong pool, jint layer, jboolean mlp,
                                      jlong x, jint rows, jintArray seqs, jlongArray caches, jlong cos, jlong sin,
                                      jlong out) {
    jsize nseq = (*env)->GetArrayLength(env, caches);
    bfk_seq *views = views_of(env, seqs, caches, nseq);
    int rc = -1;
    if (views) {
        rc = bfk_stage_half(PTR(stage), PTR(pool), layer, mlp, PTR(x), rows, views, nseq, PTR(cos), PTR(sin), PTR(out));
        free(views);
    }
    return rc;
}

JNIEXPORT jint JNICALL JNI(product)(JNIEnv *env, jclass c, jlong pool, jint type, jint rows, jint cols, jlong w,
                                    jboolean interleaved, jlong x, jint m, jboolean q8Activations, jlong out) {
    bfk_matrix mat = {type, rows, cols, bfk_row_bytes(type, cols), PTR(w), interleaved};
    return bfk_product(PTR(pool), &mat, PTR(x), m, q8Activations, PTR(out));
}

JNIEXPORT jboolean JNICALL JNI(interleave)(JNIEnv *env, jclass c, jint type, jint rows, jint cols, jlong from,
                                           jlong to) {
    bfk_matrix mat = {type, rows, cols, bfk_row_bytes(type, cols), PTR(from), 0};
    if (!bfk_x8_applies(&mat)) {
        return JNI_FALSE;
    }
    bfk_x8_interleave(&mat, PTR(to));
    return JNI_TRUE;
}


JNIEXPORT void JNICALL JNI(dequantizeRows)(JNIEnv *env, jclass c, jint type, jint rows, jint cols, jlong w,
                                           jboolean interleaved, jintArray ids, jlong out) {
    bfk_matrix mat = {type, rows, cols, bfk_row_bytes(type, cols), PTR(w), interleaved};
    jsize n = (*env)->GetArrayLength(env, ids);
    jint *id = (*env)->GetIntArrayElements(env, ids, NULL);
    for (jsize i = 0; i < n; i++) {
        bfk_dequantize_row(&mat, id[i], (float *) PTR(out) + (size_t) i * cols);
    }
    (*env)->ReleaseIntArrayElements(env, ids, id, JNI_ABORT);
}

JNIEXPORT void JNICALL JNI(rmsNorm)(JNIEnv *env, jclass c, jlong x, jlong weight, jint rows, jint n, jfloat eps,
                                    jlong out) {
    for (int r = 0; r < rows; r++) {
        bfk_rms_norm((const float *) PTR(x) + (size_t) r * n, PTR(weight), n, eps, (float *) PTR(out) + (size_t) r * n);
    }
}

JNIEXPORT jlong JNICALL JNI(rowBytes)(JNIEnv *env, jclass c, jint type, jint cols) {
    return (jlong) bfk_row_bytes(type, cols);
}

/* The address of a direct buffer's memory (0 for a heap buffer). */
JNIEXPORT jlong JNICALL JNI(address)(JNIEnv *env, jclass c, jobject buffer) {
    void *p = (*env)->GetDirectBufferAddress(env, buffer);
    return (jlong) (intptr_t) p;
}

/*
 * Drops the whole pages of [address, address + length) from this process's page tables (MADV_DONTNEED): for a
 * read-only file mapping the page cache keeps them and a later read faults them in again, so nothing changes but the
 * process's resident memory. 0, or errno.
 */
JNIEXPORT jint JNICALL JNI(releasePages)(JNIEnv *env, jclass c, jlong address, jlong length) {
    uintptr_t page = (uintptr_t) sysconf(_SC_PAGESIZE);
    uintptr_t start = ((uintptr_t) address + page - 1) & ~(page - 1);
    uintptr_t end = ((uintptr_t) address + (uintptr_t) length) & ~(page - 1);
    if (end <= start) {
        return 0;
    }
    return madvise((void *) start, end - start, MADV_DONTNEED) == 0 ? 0 : errno;
}

JNIEXPORT void JNICALL JNI(attend)(JNIEnv *env, jclass c, jlong q, jlong keys, jlong values, jint len, jint hd,
                                   jfloat scale, jlong scores, jlong out) {
    bfk_attend(PTR(q), PTR(keys), PTR(values), len, hd, scale, PTR(scores), PTR(out));
}
