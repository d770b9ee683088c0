/*
 * Butterfly's JOBS client library (docs/jobs.md): one header and one source file, libc and POSIX sockets only; TLS
 * through OpenSSL when compiled with -DJOBS_WITH_OPENSSL (and linked with -lssl -lcrypto).
 *
 *   jobs_conn *c = jobs_connect("127.0.0.1", "7470", NULL, err, sizeof err);   // NULL: plaintext
 *   jobs_batch b;
 *   if (jobs_request(c, 42, 0, JOBS_ANY_POSITION, &b) == 0) {                  // any batch of step 0 of job 42
 *       ... b.samples[i].text ...
 *       jobs_send_result(c, b.seed, b.step, b.position, "score=1", 7, &stored);
 *       jobs_batch_free(&b);
 *   }
 *   jobs_close(c);
 *
 * Every call returns 0 on success, a positive JOBS error code when the coordinator answered an ERROR frame (its text in
 * jobs_last_error), or -1 on a broken connection or malformed answer. Not thread-safe per connection.
 */
#ifndef BUTTERFLY_JOBS_CLIENT_H
#define BUTTERFLY_JOBS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A JOB_REQUEST's position asking for any batch of the step: the coordinator chooses (leases, docs/jobs.md). */
#define JOBS_ANY_POSITION UINT64_MAX

/* The error codes of an ERROR frame. */
enum jobs_error {
    JOBS_BAD_MAGIC = 1, JOBS_UNSUPPORTED_VERSION = 2, JOBS_UNKNOWN_OPCODE = 3, JOBS_PAYLOAD_TOO_LARGE = 4,
    JOBS_BAD_LENGTH = 5, JOBS_UNEXPECTED_OPCODE = 6, JOBS_UNKNOWN_JOB = 7, JOBS_POSITION_OUT_OF_RANGE = 8,
    JOBS_UNAVAILABLE = 9, JOBS_GENERATION_FAILED = 10, JOBS_RESULTS_FULL = 11, JOBS_NOT_HANDED_OUT = 12,
    JOBS_STEP_COMPLETE = 13
};

/* Mutual TLS with the cluster CA: PEM files. */
typedef struct {
    const char *ca_file;   /* the cluster CA the coordinator's certificate must chain to */
    const char *cert_file; /* this client's certificate, issued by the cluster CA */
    const char *key_file;  /* its private key */
} jobs_tls;

typedef struct {
    uint64_t position;    /* its dataset position */
    uint64_t seed;        /* its sample seed */
    int finished_by_stop; /* 1: end of sequence or a stop string; 0: max_tokens reached */
    uint32_t token_count;
    uint32_t *token_ids;  /* token_count ids */
    uint32_t text_len;
    char *text;           /* text_len bytes of UTF-8, NUL-terminated */
} jobs_sample;

typedef struct {
    uint64_t seed, step, position; /* what the batch is: resend them in its RESULT */
    uint32_t count;
    jobs_sample *samples;
} jobs_batch;

typedef struct jobs_conn jobs_conn;

/* Connects; NULL on failure, with the reason in err. tls NULL: plaintext. */
jobs_conn *jobs_connect(const char *host, const char *port, const jobs_tls *tls, char *err, size_t err_len);

/* JOB_REQUEST(seed, step, position): the batch answered, to free with jobs_batch_free. */
int jobs_request(jobs_conn *c, uint64_t seed, uint64_t step, uint64_t position, jobs_batch *out);

/* RESULT for the batch (seed, step, position); *stored (if not NULL) is 1 if it was kept, 0 if one was already. */
int jobs_send_result(jobs_conn *c, uint64_t seed, uint64_t step, uint64_t position, const void *data, uint32_t len,
                     int *stored);

/* The coordinator's text of the last ERROR frame, or what went wrong locally. */
const char *jobs_last_error(const jobs_conn *c);

void jobs_batch_free(jobs_batch *b);
void jobs_close(jobs_conn *c);

#ifdef __cplusplus
}
#endif
#endif
