/*
 * A tiny JOBS client (docs/jobs.md): asks a Butterfly coordinator's JOBS port for the batch at (seed, step, position)
 * and prints its samples, then sends a RESULT for it if one is given. Only libc and POSIX sockets; plaintext (the
 * coordinator's JOBS port with butterfly.coordinator.jobs.plaintext=true, or a cluster run without TLS).
 *
 *   gcc -O2 -Wall -o jobs_client jobs_client.c
 *   ./jobs_client HOST PORT SEED STEP POSITION [RESULT_TEXT]
 *
 * Exit status: 0 on a batch (and an acknowledged result), 2 on an ERROR frame, 1 on anything else.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { JOB_REQUEST = 0, RESULT = 1, JOB_RESPONSE = 2, ERROR = 3, RESULT_ACK = 4 };
#define MAX_FRAME (64u * 1024u * 1024u)

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
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

static int write_all(int fd, const uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, uint8_t *p, size_t n) {
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) return -1;
        p += r; n -= (size_t)r;
    }
    return 0;
}

/* Sends one frame: the 10-byte header ("JOBS", version 1, opcode, length), then the payload. */
static int send_frame(int fd, uint8_t opcode, const uint8_t *payload, uint32_t len) {
    uint8_t header[10] = {'J', 'O', 'B', 'S', 1, opcode};
    put_u32(header + 6, len);
    return write_all(fd, header, 10) || write_all(fd, payload, len) ? -1 : 0;
}

/* Reads one frame; *payload is malloc'd (the caller frees it). Returns the opcode, or -1. */
static int recv_frame(int fd, uint8_t **payload, uint32_t *len) {
    uint8_t header[10];
    if (read_all(fd, header, 10)) return -1;
    if (memcmp(header, "JOBS", 4) != 0 || header[4] != 1) return -1;
    *len = get_u32(header + 6);
    if (*len > MAX_FRAME) return -1;
    *payload = malloc(*len ? *len : 1);
    if (!*payload || read_all(fd, *payload, *len)) return -1;
    return header[5];
}

static int dial(const char *host, const char *port) {
    struct addrinfo hints = {0}, *res, *a;
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

static int print_error(const uint8_t *p, uint32_t len) {
    if (len < 2) return 1;
    fprintf(stderr, "ERROR %u: %.*s\n", (unsigned)(p[0] << 8 | p[1]), (int)(len - 2), (const char *)p + 2);
    return 2;
}

/* Prints a JOB_RESPONSE's samples: [count:u32] then [position:u64][seed:u64][finish:u8][n:u32][ids:u32*n][len:u32][text]. */
static int print_batch(const uint8_t *p, uint32_t len) {
    if (len < 28 || get_u32(p + 24) != len - 28) return 1;
    const uint8_t *s = p + 28, *end = p + len;
    if (end - s < 4) return 1;
    uint32_t count = get_u32(s);
    s += 4;
    printf("batch seed=%llu step=%llu position=%llu samples=%u\n", (unsigned long long)get_u64(p),
           (unsigned long long)get_u64(p + 8), (unsigned long long)get_u64(p + 16), count);
    for (uint32_t i = 0; i < count; i++) {
        if (end - s < 21) return 1;
        uint64_t position = get_u64(s), seed = get_u64(s + 8);
        uint8_t finish = s[16];
        uint32_t tokens = get_u32(s + 17);
        s += 21;
        if ((uint64_t)(end - s) < (uint64_t)tokens * 4 + 4) return 1;
        printf("sample %llu seed=%llu finish=%s tokens=[", (unsigned long long)position, (unsigned long long)seed,
               finish ? "length" : "stop");
        for (uint32_t t = 0; t < tokens; t++) printf(t ? ",%u" : "%u", get_u32(s + 4 * t));
        s += 4 * (size_t)tokens;
        uint32_t text = get_u32(s);
        s += 4;
        if ((uint64_t)(end - s) < text) return 1;
        printf("] text=%.*s\n", (int)text, (const char *)s);
        s += text;
    }
    return s == end ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s HOST PORT SEED STEP POSITION [RESULT_TEXT]\n", argv[0]);
        return 1;
    }
    uint8_t address[24];
    put_u64(address, strtoull(argv[3], NULL, 10));
    put_u64(address + 8, strtoull(argv[4], NULL, 10));
    put_u64(address + 16, strtoull(argv[5], NULL, 10));
    int fd = dial(argv[1], argv[2]);
    if (fd < 0) {
        fprintf(stderr, "cannot connect to %s port %s\n", argv[1], argv[2]);
        return 1;
    }
    uint8_t *payload = NULL;
    uint32_t len = 0;
    if (send_frame(fd, JOB_REQUEST, address, sizeof address)) return 1;
    int op = recv_frame(fd, &payload, &len);
    if (op < 0) {
        fprintf(stderr, "no JOBS frame in answer (connection closed, or not a JOBS port)\n");
        return 1;
    }
    int status = op == JOB_RESPONSE ? print_batch(payload, len) : op == ERROR ? print_error(payload, len) : 1;
    free(payload);
    if (status == 0 && argc == 7) {
        uint32_t n = (uint32_t)strlen(argv[6]);
        uint8_t *result = malloc(28 + (size_t)n);
        if (!result) return 1;
        memcpy(result, address, 24);
        put_u32(result + 24, n);
        memcpy(result + 28, argv[6], n);
        if (send_frame(fd, RESULT, result, 28 + n)) return 1;
        free(result);
        op = recv_frame(fd, &payload, &len);
        if (op == RESULT_ACK && len == 25) {
            printf("result %s\n", payload[24] ? "stored" : "already stored");
        } else {
            status = op == ERROR ? print_error(payload, len) : 1;
        }
        free(payload);
    }
    close(fd);
    return status;
}
