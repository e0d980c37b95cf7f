/*
 * Baseline for `./memfit bench shards`: the plain C loop that densifies random cells of CSR shards into a batch.
 * mmap each shard's .data.npy (float32), .indices.npy (int32) and .indptr.npy (int64); for random batches of cells
 * (a shuffle of all cells per epoch, cut into batches), zero each cell's row of the batch buffer and scatter its
 * stored values into it, threads taking batches in turn. Prints one JSON line: first epoch and steady state, in
 * cells/s and dense GB/s (genes x 4 bytes per cell).
 *
 * With --window=WINDOW first it is a loader instead of a bare gather, as gather.c's WINDOW: THREADS readers claim
 * batches in order, at most WINDOW ahead of a consumer (the main thread) that takes them in order, WINDOW + 1 batch
 * buffers rotating - the hand-off a loader feeding a training loop pays.
 *
 * usage: csr_gather [--window=WINDOW] GENES BATCH EPOCHS THREADS SEED STEM...   (STEM: shard path without .data.npy)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct { const float *data; const int32_t *indices; const int64_t *indptr; long cells; } shard_t;

static long genes, batch, threads, shard_count, cells;
static shard_t *shards;
static long *starts;

typedef struct { long *order; long first_batch, step, batches; double sink; } job_t;

static uint64_t next(uint64_t *s) { /* splitmix64, as gather.c */
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

/* Maps a .npy read-only and returns its data region and element count (format 1.0 and 2.0 headers). */
static const void *map_npy(const char *path, long element_bytes, long *elements) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) { perror(path); exit(1); }
    struct stat st;
    fstat(fd, &st);
    const unsigned char *base = mmap(NULL, st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); exit(1); }
    close(fd);
    long offset = base[6] == 1 ? 10 + (base[8] | base[9] << 8)
                               : 12 + ((long) base[8] | (long) base[9] << 8 | (long) base[10] << 16 | (long) base[11] << 24);
    *elements = (st.st_size - offset) / element_bytes;
    return base + offset;
}

/* Densifies batch b of the order into buffer: each cell's row zeroed, then its stored values scattered. */
static void fill(const long *order, long b, float *buffer) {
    for (long i = 0; i < batch; i++) {
        long cell = order[b * batch + i];
        long lo = 0, hi = shard_count - 1; /* the last shard starting at or before the cell */
        while (lo < hi) {
            long mid = (lo + hi + 1) / 2;
            if (starts[mid] <= cell) lo = mid; else hi = mid - 1;
        }
        const shard_t *s = &shards[lo];
        long row = cell - starts[lo];
        float *out = buffer + i * genes;
        memset(out, 0, genes * sizeof(float));
        for (int64_t k = s->indptr[row]; k < s->indptr[row + 1]; k++) {
            out[s->indices[k]] = s->data[k];
        }
    }
}
static void *work(void *arg) {
    job_t *job = arg;
    float *buffer = aligned_alloc(64, ((batch * genes * 4 + 63) / 64) * 64);
    for (long b = job->first_batch; b < job->batches; b += job->step) {
        fill(job->order, b, buffer);
        job->sink += buffer[(b * 31) % (batch * genes)];
    }
    free(buffer);
    return NULL;
}
/* The loader variant, as gather.c's: readers and one in-order consumer sharing WINDOW + 1 buffers. */
static long window;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
typedef struct { const long *order; long batches; float **buffers; long *ready; long next_claim, taken; } loader_t;
static void *reader(void *arg) {
    loader_t *l = arg;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (l->next_claim < l->batches && l->next_claim > l->taken + window) pthread_cond_wait(&changed, &lock);
        if (l->next_claim >= l->batches) { pthread_mutex_unlock(&lock); return NULL; }
        long b = l->next_claim++;
        pthread_mutex_unlock(&lock);
        fill(l->order, b, l->buffers[b % (window + 1)]);
        pthread_mutex_lock(&lock);
        l->ready[b % (window + 1)] = b;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
}
static double loader_epoch(const long *order, long batches, float **buffers) {
    pthread_t ids[64];
    long ready[1025];
    for (long i = 0; i <= window; i++) ready[i] = -1;
    loader_t l = {order, batches, buffers, ready, 0, 0};
    double sink = 0, start = now();
    for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, reader, &l);
    for (long b = 0; b < batches; b++) {
        pthread_mutex_lock(&lock);
        l.taken = b;   /* taking batch b gives back batch b - 1's buffer */
        pthread_cond_broadcast(&changed);
        while (ready[b % (window + 1)] != b) pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        sink += buffers[b % (window + 1)][(b * 31) % (batch * genes)];
    }
    for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    if (sink == -1) puts("");
    return now() - start;
}

static double epoch(long *order, long batches) {
    pthread_t ids[64];
    job_t jobs[64];
    double start = now();
    for (long t = 0; t < threads; t++) {
        jobs[t] = (job_t){order, t, threads, batches, 0};
        pthread_create(&ids[t], NULL, work, &jobs[t]);
    }
    for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    return now() - start;
}

int main(int argc, char **argv) {
    if (argc > 1 && strncmp(argv[1], "--window=", 9) == 0) {
        window = atol(argv[1] + 9);
        if (window < 1 || window > 1024) { fprintf(stderr, "window must be in [1, 1024]\n"); return 2; }
        argv++;
        argc--;
    }
    if (argc < 7) {
        fprintf(stderr, "usage: csr_gather [--window=WINDOW] GENES BATCH EPOCHS THREADS SEED STEM...\n");
        return 2;
    }
    genes = atol(argv[1]); batch = atol(argv[2]); long epochs = atol(argv[3]); threads = atol(argv[4]);
    uint64_t seed = strtoull(argv[5], 0, 10);
    if (threads < 1 || threads > 64) { fprintf(stderr, "threads must be in [1, 64]\n"); return 2; }
    shard_count = argc - 6;
    shards = calloc(shard_count, sizeof(shard_t));
    starts = calloc(shard_count, sizeof(long));
    char path[4096];
    for (long s = 0; s < shard_count; s++) {
        long n, nnz, nnz2;
        snprintf(path, sizeof path, "%s.data.npy", argv[6 + s]);
        shards[s].data = map_npy(path, 4, &nnz);
        snprintf(path, sizeof path, "%s.indices.npy", argv[6 + s]);
        shards[s].indices = map_npy(path, 4, &nnz2);
        snprintf(path, sizeof path, "%s.indptr.npy", argv[6 + s]);
        shards[s].indptr = map_npy(path, 8, &n);
        shards[s].cells = n - 1;
        starts[s] = cells;
        cells += n - 1;
    }
    long batches = cells / batch;
    long *order = malloc(sizeof(long) * cells);
    float **buffers = malloc(sizeof(float *) * (window + 1));
    for (long i = 0; i <= window; i++) buffers[i] = aligned_alloc(64, ((batch * genes * 4 + 63) / 64) * 64);
    double first = 0, steady = 0;
    for (long e = 0; e < epochs; e++) {
        for (long i = 0; i < cells; i++) order[i] = i;
        uint64_t s = seed + e;
        for (long i = cells - 1; i > 0; i--) {
            long j = next(&s) % (i + 1);
            long tmp = order[i]; order[i] = order[j]; order[j] = tmp;
        }
        double seconds = window > 0 ? loader_epoch(order, batches, buffers) : epoch(order, batches);
        if (e == 0) first = seconds; else steady += seconds;
    }
    double done = (double) batches * batch;
    double steady_cells = epochs > 1 ? done * (epochs - 1) / steady : 0.0;
    printf("{\"threads\": %ld, \"first_cells_per_s\": %.1f, \"steady_cells_per_s\": %.1f, \"steady_gbps\": %.4f}\n",
           threads, done / first, steady_cells, steady_cells * genes * 4 / 1e9);
    return 0;
}
