/*
 * Baseline for `./memfit bench loader`: the plain C loop a loader competes with.
 * mmap the .npy, then for random batches of rows memcpy each row into one batch buffer.
 * Prints one JSON line per thread count: first epoch of a fresh mapping, then steady-state GB/s.
 *
 * usage: gather FILE DATA_OFFSET ROWS ROW_BYTES BATCH EPOCHS THREADS SEED
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
    if (argc != 9) {
        fprintf(stderr, "usage: gather FILE DATA_OFFSET ROWS ROW_BYTES BATCH EPOCHS THREADS SEED\n");
        return 2;
    }
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
    double first = 0, steady = 0;
    for (long e = 0; e < epochs; e++) {
        for (long i = 0; i < rows; i++) order[i] = i;
        uint64_t s = seed + e;
        for (long i = rows - 1; i > 0; i--) {
            long j = next(&s) % (i + 1);
            long tmp = order[i]; order[i] = order[j]; order[j] = tmp;
        }
        double seconds = epoch(base, order, batches);
        if (e == 0) first = seconds; else steady += seconds;
    }
    double bytes = (double) batches * batch * row_bytes;
    printf("{\"threads\": %ld, \"first_gbps\": %.4f, \"steady_gbps\": %.4f}\n", threads,
           bytes / first / 1e9, epochs > 1 ? bytes * (epochs - 1) / steady / 1e9 : 0.0);
    munmap((void *) base, size);
    close(fd);
    return 0;
}
