/*
 * Baseline for `./memfit bench loader`: the plain C loop a loader competes with.
 * mmap the .npy, then for random batches of rows memcpy each row into one batch buffer.
 * Prints one JSON line per thread count: first epoch of a fresh mapping, then steady-state GB/s.
 *
 * With a ninth argument WINDOW it is a loader instead of a bare gather: THREADS readers claim batches in order, at
 * most WINDOW ahead of a consumer (the main thread) that takes them in order and holds each until it takes the next,
 * so WINDOW + 1 batch buffers rotate - the hand-off every loader feeding a training loop pays, written in plain C.
 *
 * usage: gather FILE DATA_OFFSET ROWS ROW_BYTES BATCH EPOCHS THREADS SEED [WINDOW]
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static long data_offset, rows, row_bytes, batch, threads;
static uint64_t seed;

typedef struct { const char *base; long *order; long first_batch, step, batches; double sink; } job_t;

static uint64_t next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *work(void *arg) {
    job_t *job = arg;
    char *buffer = aligned_alloc(64, ((batch * row_bytes + 63) / 64) * 64);
    for (long b = job->first_batch; b < job->batches; b += job->step) {
        for (long i = 0; i < batch; i++) {
            long r = job->order[b * batch + i];
            memcpy(buffer + i * row_bytes, job->base + data_offset + r * row_bytes, row_bytes);
        }
        job->sink += buffer[(b * 31) % (batch * row_bytes)];
    }
    free(buffer);
    return NULL;
}

/* The loader variant: readers and one in-order consumer sharing WINDOW + 1 buffers. */
static long window;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
typedef struct { const char *base; long *order; long batches; char **buffers; long *ready; long next_claim, taken; } loader_t;

static void *reader(void *arg) {
    loader_t *l = arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (l->next_claim < l->batches && l->next_claim > l->taken + window) pthread_cond_wait(&changed, &lock);
        if (l->next_claim >= l->batches) { pthread_mutex_unlock(&lock); return NULL; }
        long b = l->next_claim++;
        pthread_mutex_unlock(&lock);
        char *buffer = l->buffers[b % (window + 1)];
        for (long i = 0; i < batch; i++) {
            long r = l->order[b * batch + i];
            memcpy(buffer + i * row_bytes, l->base + data_offset + r * row_bytes, row_bytes);
        }
        pthread_mutex_lock(&lock);
        l->ready[b % (window + 1)] = b;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
}

static double loader_epoch(const char *base, long *order, long batches, char **buffers) {
    pthread_t ids[64];
    long ready[1025];
    for (long i = 0; i <= window; i++) ready[i] = -1;
    loader_t l = {base, order, batches, buffers, ready, 0, 0};
    double sink = 0, start = now();
    for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, reader, &l);
    for (long b = 0; b < batches; b++) {
        pthread_mutex_lock(&lock);
        l.taken = b;   /* taking batch b gives back batch b - 1's buffer */
        pthread_cond_broadcast(&changed);
        while (ready[b % (window + 1)] != b) pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        sink += buffers[b % (window + 1)][(b * 31) % (batch * row_bytes)];
    }
    for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    if (sink == -1) puts("");
    return now() - start;
}

static double epoch(const char *base, long *order, long batches) {
    pthread_t ids[64];
    job_t jobs[64];
    double start = now();
    for (long t = 0; t < threads; t++) {
        jobs[t] = (job_t){base, order, t, threads, batches, 0};
        pthread_create(&ids[t], NULL, work, &jobs[t]);
    }
    for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    return now() - start;
}

int main(int argc, char **argv) {
    if (argc != 9 && argc != 10) {
        fprintf(stderr, "usage: gather FILE DATA_OFFSET ROWS ROW_BYTES BATCH EPOCHS THREADS SEED [WINDOW]\n");
        return 2;
    }
    window = argc == 10 ? atol(argv[9]) : 0;
    if (window < 0 || window > 1024) { fprintf(stderr, "window must be in [1, 1024]\n"); return 2; }
    path = argv[1]; data_offset = atol(argv[2]); rows = atol(argv[3]); row_bytes = atol(argv[4]);
    batch = atol(argv[5]); long epochs = atol(argv[6]); threads = atol(argv[7]); seed = strtoull(argv[8], 0, 10);
    if (threads < 1 || threads > 64) { fprintf(stderr, "threads must be in [1, 64]\n"); return 2; }
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); return 1; }
    size_t size = data_offset + rows * row_bytes;
    const char *base = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 1; }
    long batches = rows / batch;
    long *order = malloc(sizeof(long) * rows);
    char **buffers = malloc(sizeof(char *) * (window + 1));
    for (long i = 0; i <= window; i++) buffers[i] = aligned_alloc(64, ((batch * row_bytes + 63) / 64) * 64);
    double first = 0, steady = 0;
    for (long e = 0; e < epochs; e++) {
        for (long i = 0; i < rows; i++) order[i] = i;
        uint64_t s = seed + e;
        for (long i = rows - 1; i > 0; i--) {
            long j = next(&s) % (i + 1);
            long tmp = order[i]; order[i] = order[j]; order[j] = tmp;
        }
        double seconds = window > 0 ? loader_epoch(base, order, batches, buffers) : epoch(base, order, batches);
        if (e == 0) first = seconds; else steady += seconds;
    }
    double bytes = (double) batches * batch * row_bytes;
    printf("{\"threads\": %ld, \"first_gbps\": %.4f, \"steady_gbps\": %.4f}\n", threads,
           bytes / first / 1e9, epochs > 1 ? bytes * (epochs - 1) / steady / 1e9 : 0.0);
    munmap((void *) base, size);
    close(fd);
    return 0;
}
