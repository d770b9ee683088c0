/*
 * An example JOBS client (docs/jobs.md) on the library jobs_client.h: asks a Butterfly coordinator's JOBS port for
 * batches, prints their samples, and answers each with a RESULT when one is given.
 *
 *   gcc -O2 -Wall -o jobs_example jobs_example.c jobs_client.c                  # plaintext
 *   gcc -O2 -Wall -DJOBS_WITH_OPENSSL -o jobs_example jobs_example.c jobs_client.c -lssl -lcrypto
 *   ./jobs_example HOST PORT SEED STEP POSITION|any [RESULT_TEXT] [BATCHES]
 *
 * POSITION "any" lets the coordinator choose each batch (leases); BATCHES (default 1) batches are pulled, in one
 * connection, the next at the previous position + its sample count unless "any". With JOBS_TLS_CA, JOBS_TLS_CERT and
 * JOBS_TLS_KEY set (PEM files: the cluster CA, a certificate it issued, its key) it speaks mutual TLS.
 * Exit status: 0 when every batch came (and each result was acknowledged), 2 on an ERROR frame, 1 otherwise.
 */
#include "jobs_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_batch(const jobs_batch *b) {
    printf("batch seed=%llu step=%llu position=%llu samples=%u\n", (unsigned long long)b->seed,
           (unsigned long long)b->step, (unsigned long long)b->position, (unsigned)b->count);
    for (uint32_t i = 0; i < b->count; i++) {
        const jobs_sample *s = &b->samples[i];
        printf("sample %llu seed=%llu finish=%s tokens=[", (unsigned long long)s->position,
               (unsigned long long)s->seed, s->finished_by_stop ? "stop" : "length");
        for (uint32_t t = 0; t < s->token_count; t++) printf(t ? ",%u" : "%u", s->token_ids[t]);
        printf("] text=%.*s\n", (int)s->text_len, s->text);
    }
}

int main(int argc, char **argv) {
    if (argc < 6 || argc > 8) {
        fprintf(stderr, "usage: %s HOST PORT SEED STEP POSITION|any [RESULT_TEXT] [BATCHES]\n", argv[0]);
        return 1;
    }
    uint64_t seed = strtoull(argv[3], NULL, 10), step = strtoull(argv[4], NULL, 10);
    int any = strcmp(argv[5], "any") == 0;
    uint64_t position = any ? JOBS_ANY_POSITION : strtoull(argv[5], NULL, 10);
    const char *result = argc >= 7 ? argv[6] : NULL;
    long batches = argc == 8 ? strtol(argv[7], NULL, 10) : 1;
    jobs_tls tls = {getenv("JOBS_TLS_CA"), getenv("JOBS_TLS_CERT"), getenv("JOBS_TLS_KEY")};
    char err[512];
    jobs_conn *c = jobs_connect(argv[1], argv[2], tls.ca_file ? &tls : NULL, err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int status = 0;
    for (long n = 0; n < batches && status == 0; n++) {
        jobs_batch b;
        status = jobs_request(c, seed, step, position, &b);
        if (status == 0) {
            print_batch(&b);
            if (result) {
                int stored = 0;
                status = jobs_send_result(c, b.seed, b.step, b.position, result, (uint32_t)strlen(result), &stored);
                if (status == 0) printf("result %s\n", stored ? "stored" : "already stored");
            }
            if (!any) position = b.position + b.count;
            jobs_batch_free(&b);
        }
        fflush(stdout);
    }
    if (status > 0) fprintf(stderr, "ERROR %d: %s\n", status, jobs_last_error(c));
    else if (status < 0) fprintf(stderr, "%s\n", jobs_last_error(c));
    jobs_close(c);
    return status == 0 ? 0 : status > 0 ? 2 : 1;
}
