/* Butterfly's JOBS client library: see jobs_client.h and docs/jobs.md. */
#include "jobs_client.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef JOBS_WITH_OPENSSL
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

enum { OP_JOB_REQUEST = 0, OP_RESULT = 1, OP_JOB_RESPONSE = 2, OP_ERROR = 3, OP_RESULT_ACK = 4 };
/* The largest answer accepted: a batch of generated samples. */
#define JOBS_MAX_ANSWER (256u * 1024u * 1024u)

struct jobs_conn {
    int fd;
#ifdef JOBS_WITH_OPENSSL
    SSL_CTX *ctx;
    SSL *ssl;
#endif
    char error[512];
};

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static void put_u64(uint8_t *p, uint64_t v) {
    put_u32(p, (uint32_t)(v >> 32));
    put_u32(p + 4, (uint32_t)v);
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) << 32 | get_u32(p + 4);
}

static int fail(jobs_conn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int write_all(jobs_conn *c, const uint8_t *p, size_t n) {
    while (n > 0) {
#ifdef JOBS_WITH_OPENSSL
        long w = c->ssl ? SSL_write(c->ssl, p, n > 1u << 30 ? 1 << 30 : (int)n) : (long)write(c->fd, p, n);
#else
        long w = (long)write(c->fd, p, n);
#endif
        if (w <= 0) return fail(c, "connection lost while sending");
        p += w; n -= (size_t)w;
    }
    return 0;
}

static int read_all(jobs_conn *c, uint8_t *p, size_t n) {
    while (n > 0) {
#ifdef JOBS_WITH_OPENSSL
        long r = c->ssl ? SSL_read(c->ssl, p, n > 1u << 30 ? 1 << 30 : (int)n) : (long)read(c->fd, p, n);
#else
        long r = (long)read(c->fd, p, n);
#endif
        if (r <= 0) return fail(c, "connection closed by the coordinator");
        p += r; n -= (size_t)r;
    }
    return 0;
}

/* One frame: the 10-byte header ("JOBS", version 1, opcode, length), then the payload. */
static int send_frame(jobs_conn *c, uint8_t opcode, const uint8_t *payload, uint32_t len) {
    uint8_t header[10] = {'J', 'O', 'B', 'S', 1, opcode};
    put_u32(header + 6, len);
    return write_all(c, header, 10) || write_all(c, payload, len) ? -1 : 0;
}

/* Reads one frame into a malloc'd *payload (freed by the caller); the opcode, or -1. */
static int recv_frame(jobs_conn *c, uint8_t **payload, uint32_t *len) {
    uint8_t header[10];
    *payload = NULL;
    if (read_all(c, header, 10)) return -1;
    if (memcmp(header, "JOBS", 4) != 0 || header[4] != 1) return fail(c, "not a JOBS version 1 frame");
    *len = get_u32(header + 6);
    if (*len > JOBS_MAX_ANSWER) return fail(c, "answer of %u bytes is too large", (unsigned)*len);
    *payload = malloc(*len ? *len : 1);
    if (!*payload) return fail(c, "out of memory");
    if (read_all(c, *payload, *len)) {
        free(*payload);
        *payload = NULL;
        return -1;
    }
    return header[5];
}

/* An ERROR frame's code, its text kept. */
static int error_frame(jobs_conn *c, const uint8_t *p, uint32_t len) {
    if (len < 2) return fail(c, "ERROR frame without a code");
    int code = p[0] << 8 | p[1];
    snprintf(c->error, sizeof c->error, "%.*s", (int)(len - 2), (const char *)p + 2);
    return code > 0 ? code : -1;
}

/* Any other answer than the expected one or an ERROR. */
static int unexpected(jobs_conn *c, int op, uint8_t *payload, uint32_t len) {
    int status = op == OP_ERROR ? error_frame(c, payload, len) : op < 0 ? -1 : fail(c, "unexpected opcode %d", op);
    free(payload);
    return status;
}

static int dial(const char *host, const char *port) {
    struct addrinfo hints, *res, *a;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
    int fd = -1;
    for (a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
        if (fd >= 0) close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

#ifdef JOBS_WITH_OPENSSL
/* TLS 1.3, the coordinator's certificate checked against the cluster CA and the host name, this client's shown. */
static int start_tls(jobs_conn *c, const char *host, const jobs_tls *tls) {
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (!c->ctx || !SSL_CTX_set_min_proto_version(c->ctx, TLS1_3_VERSION)) return fail(c, "no TLS 1.3");
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(c->ctx, tls->ca_file, NULL) != 1) return fail(c, "cannot read %s", tls->ca_file);
    if (SSL_CTX_use_certificate_chain_file(c->ctx, tls->cert_file) != 1
        || SSL_CTX_use_PrivateKey_file(c->ctx, tls->key_file, SSL_FILETYPE_PEM) != 1) {
        return fail(c, "cannot read the client certificate %s or key %s", tls->cert_file, tls->key_file);
    }
    c->ssl = SSL_new(c->ctx);
    if (!c->ssl || !SSL_set_fd(c->ssl, c->fd)) return fail(c, "TLS setup failed");
    /* An address is checked against the certificate's IP addresses, a name against its DNS names (and sent as SNI,
       which may not carry an address). */
    unsigned char address[16];
    if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1) {
        if (!X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host)) return fail(c, "TLS setup failed");
    } else if (!SSL_set1_host(c->ssl, host) || !SSL_set_tlsext_host_name(c->ssl, host)) {
        return fail(c, "TLS setup failed");
    }
    if (SSL_connect(c->ssl) != 1) {
        char why[256];
        ERR_error_string_n(ERR_get_error(), why, sizeof why);
        return fail(c, "TLS handshake failed: %s", why);
    }
    return 0;
}
#endif

jobs_conn *jobs_connect(const char *host, const char *port, const jobs_tls *tls, char *err, size_t err_len) {
    jobs_conn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    c->fd = dial(host, port);
    if (c->fd < 0) {
        snprintf(err, err_len, "cannot connect to %s port %s", host, port);
        free(c);
        return NULL;
    }
    if (tls) {
#ifdef JOBS_WITH_OPENSSL
        if (start_tls(c, host, tls)) {
            snprintf(err, err_len, "%s", c->error);
            jobs_close(c);
            return NULL;
        }
#else
        snprintf(err, err_len, "TLS asked for, but jobs_client.c was compiled without -DJOBS_WITH_OPENSSL");
        jobs_close(c);
        return NULL;
#endif
    }
    return c;
}

/* A JOB_RESPONSE's batch: [count:u32] then [position:u64][seed:u64][finish:u8][n:u32][ids:u32*n][len:u32][text]. */
static int parse_batch(jobs_conn *c, const uint8_t *p, uint32_t len, jobs_batch *out) {
    memset(out, 0, sizeof *out);
    if (len < 32 || get_u32(p + 24) != len - 28) return fail(c, "malformed JOB_RESPONSE");
    out->seed = get_u64(p);
    out->step = get_u64(p + 8);
    out->position = get_u64(p + 16);
    const uint8_t *s = p + 32, *end = p + len;
    uint32_t count = get_u32(p + 28);
    if (count > (uint32_t)(end - s) / 25) return fail(c, "malformed batch: %u samples", (unsigned)count);
    out->samples = calloc(count ? count : 1, sizeof *out->samples);
    if (!out->samples) return fail(c, "out of memory");
    out->count = count; /* zeroed: a sample parsed halfway is freed whole by jobs_batch_free */
    for (uint32_t i = 0; i < count; i++) {
        jobs_sample *x = &out->samples[i];
        if (end - s < 21) return fail(c, "malformed batch");
        x->position = get_u64(s);
        x->seed = get_u64(s + 8);
        x->finished_by_stop = s[16] == 0;
        x->token_count = get_u32(s + 17);
        s += 21;
        if ((uint64_t)(end - s) < (uint64_t)x->token_count * 4 + 4) return fail(c, "malformed batch");
        x->token_ids = malloc(x->token_count ? (size_t)x->token_count * 4 : 1);
        if (!x->token_ids) return fail(c, "out of memory");
        for (uint32_t t = 0; t < x->token_count; t++) x->token_ids[t] = get_u32(s + 4 * (size_t)t);
        s += 4 * (size_t)x->token_count;
        x->text_len = get_u32(s);
        s += 4;
        if ((uint64_t)(end - s) < x->text_len) return fail(c, "malformed batch");
        x->text = malloc((size_t)x->text_len + 1);
        if (!x->text) return fail(c, "out of memory");
        memcpy(x->text, s, x->text_len);
        x->text[x->text_len] = 0;
        s += x->text_len;
    }
    return s == end ? 0 : fail(c, "malformed batch: trailing bytes");
}

int jobs_request(jobs_conn *c, uint64_t seed, uint64_t step, uint64_t position, jobs_batch *out) {
    uint8_t request[24];
    put_u64(request, seed);
    put_u64(request + 8, step);
    put_u64(request + 16, position);
    memset(out, 0, sizeof *out);
    if (send_frame(c, OP_JOB_REQUEST, request, sizeof request)) return -1;
    uint8_t *payload;
    uint32_t len = 0;
    int op = recv_frame(c, &payload, &len);
    if (op != OP_JOB_RESPONSE) return unexpected(c, op, payload, len);
    int status = parse_batch(c, payload, len, out);
    free(payload);
    if (status) jobs_batch_free(out);
    return status;
}

int jobs_send_result(jobs_conn *c, uint64_t seed, uint64_t step, uint64_t position, const void *data, uint32_t len,
                     int *stored) {
    uint8_t *frame = malloc(28 + (size_t)len);
    if (!frame) return fail(c, "out of memory");
    put_u64(frame, seed);
    put_u64(frame + 8, step);
    put_u64(frame + 16, position);
    put_u32(frame + 24, len);
    if (len) memcpy(frame + 28, data, len);
    int sent = send_frame(c, OP_RESULT, frame, 28 + len);
    free(frame);
    if (sent) return -1;
    uint8_t *payload;
    uint32_t answer_len = 0;
    int op = recv_frame(c, &payload, &answer_len);
    if (op != OP_RESULT_ACK) return unexpected(c, op, payload, answer_len);
    int status = answer_len == 25 ? 0 : fail(c, "malformed RESULT_ACK");
    if (status == 0 && stored) *stored = payload[24] != 0;
    free(payload);
    return status;
}

const char *jobs_last_error(const jobs_conn *c) {
    return c->error;
}

void jobs_batch_free(jobs_batch *b) {
    for (uint32_t i = 0; b->samples && i < b->count; i++) {
        free(b->samples[i].token_ids);
        free(b->samples[i].text);
    }
    free(b->samples);
    memset(b, 0, sizeof *b);
}

void jobs_close(jobs_conn *c) {
    if (!c) return;
#ifdef JOBS_WITH_OPENSSL
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    if (c->ctx) SSL_CTX_free(c->ctx);
#endif
    if (c->fd >= 0) close(c->fd);
    free(c);
}
