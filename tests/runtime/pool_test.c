/* Checks of runtime/aotk_pool.c, run by tests/runtime/test_pool.py (plain, under
 * valgrind, and with sanitizers). Prints "ok" and exits 0, or names the failed check. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotk_pool_internal.h"

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

#define MAX_N 5000
#define MAX_CHUNKS 64
#define CHUNKS_PER_THREAD 4 /* as in aotk_pool.c */

/* Each iteration adds its index to its own slot; chunks are recorded to check the split. */
struct sum_ctx {
  int64_t *slots;
  int64_t begins[MAX_CHUNKS];
  int64_t ends[MAX_CHUNKS];
  int chunks; /* updated under mu */
  pthread_mutex_t mu;
};

static void sum_task(void *p, int64_t begin, int64_t end) {
  struct sum_ctx *ctx = (struct sum_ctx *)p;
  for (int64_t i = begin; i < end; i++) ctx->slots[i] += i + 1;
  pthread_mutex_lock(&ctx->mu);
  if (ctx->chunks < MAX_CHUNKS) {
    ctx->begins[ctx->chunks] = begin;
    ctx->ends[ctx->chunks] = end;
  }
  ctx->chunks++;
  pthread_mutex_unlock(&ctx->mu);
}

static int64_t run_sum(int64_t n, struct sum_ctx *ctx) {
  memset(ctx->slots, 0, sizeof(int64_t) * MAX_N);
  ctx->chunks = 0;
  aotk_parallel_for(sum_task, ctx, n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    CHECK(ctx->slots[i] == i + 1); /* every iteration ran exactly once */
    total += ctx->slots[i];
  }
  return total;
}

/* Thread t's run of chunks tiles its even share of [0, n) (the first n % threads shares
 * one longer), in its even share of the chunks. */
static void check_shares(const struct sum_ctx *ctx, int64_t n, int threads) {
  for (int t = 0; t < threads; t++) {
    int64_t begin = t * (n / threads) + (t < n % threads ? t : n % threads);
    int64_t end = begin + n / threads + (t < n % threads ? 1 : 0);
    int in_share = 0;
    for (int c = 0; c < ctx->chunks; c++) {
      if (ctx->begins[c] < begin || ctx->begins[c] >= end) continue;
      CHECK(ctx->ends[c] <= end);
      in_share++;
    }
    CHECK(in_share == ctx->chunks / threads + (t < ctx->chunks % threads ? 1 : 0));
  }
}

/* The chunks tile [0, n) contiguously, CHUNKS_PER_THREAD per thread at most, their sizes
 * differing by at most one: the split depends on n and the pool's size only. */
static void check_split(const struct sum_ctx *ctx, int64_t n, int threads) {
  int most = threads == 1 ? 1 : threads * CHUNKS_PER_THREAD; /* one thread: one call */
  int expected = n < most ? (int)n : most;
  CHECK(ctx->chunks == expected);
  int64_t smallest = n, largest = 0, next = 0;
  for (int found = 1; found && next < n;) { /* follow the chunks from 0 to n */
    found = 0;
    for (int c = 0; c < ctx->chunks; c++) {
      if (ctx->begins[c] != next) continue;
      int64_t size = ctx->ends[c] - ctx->begins[c];
      smallest = size < smallest ? size : smallest;
      largest = size > largest ? size : largest;
      next = ctx->ends[c];
      found = 1;
      break;
    }
  }
  CHECK(next == n);
  CHECK(n == 0 || largest - smallest <= 1);
  if (threads > 1) check_shares(ctx, n, threads);
}

static void test_sums(void) {
  struct sum_ctx ctx;
  ctx.slots = (int64_t *)calloc(MAX_N, sizeof(int64_t));
  pthread_mutex_init(&ctx.mu, NULL);
  for (int threads = 1; threads <= 5; threads++) {
    aotk_pool *pool = aotk_pool_create(threads);
    CHECK(pool != NULL && aotk_pool_threads(pool) == threads);
    aotk_pool *previous = aotk_pool_bind(pool);
    for (int64_t n = 0; n < MAX_N; n += n < 40 ? 1 : 397) {
      CHECK(run_sum(n, &ctx) == n * (n + 1) / 2);
      check_split(&ctx, n, threads);
    }
    CHECK(aotk_pool_bind(previous) == pool);
    aotk_pool_destroy(pool);
  }
  pthread_mutex_destroy(&ctx.mu);
  free(ctx.slots);
}

/* A task that calls aotk_parallel_for: the inner loop must run inline, on its thread. */
struct nested_ctx {
  int64_t inner_n;
  int64_t counts[64];
  int inline_ok[64];
};

struct inner_ctx {
  pthread_t owner;
  int64_t calls;
  int64_t iterations;
  int same_thread;
};

static void inner_task(void *p, int64_t begin, int64_t end) {
  struct inner_ctx *ctx = (struct inner_ctx *)p;
  ctx->calls++;
  ctx->iterations += end - begin;
  ctx->same_thread &= pthread_equal(pthread_self(), ctx->owner) != 0;
}

static void outer_task(void *p, int64_t begin, int64_t end) {
  struct nested_ctx *ctx = (struct nested_ctx *)p;
  for (int64_t i = begin; i < end; i++) {
    struct inner_ctx inner = {pthread_self(), 0, 0, 1};
    aotk_parallel_for(inner_task, &inner, ctx->inner_n);
    ctx->counts[i] = inner.iterations;
    ctx->inline_ok[i] = inner.calls == 1 && inner.same_thread;
  }
}

static void test_nested(void) {
  aotk_pool *pool = aotk_pool_create(3);
  CHECK(pool != NULL);
  aotk_pool *previous = aotk_pool_bind(pool);
  struct nested_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.inner_n = 1000;
  aotk_parallel_for(outer_task, &ctx, 64);
  for (int i = 0; i < 64; i++) CHECK(ctx.counts[i] == 1000 && ctx.inline_ok[i]);
  aotk_pool_bind(previous);
  aotk_pool_destroy(pool);
}

/* Two threads run loops on one pool at once: each call either gets the pool or runs inline. */
struct client {
  aotk_pool *pool;
  int ok;
};

static void *client_main(void *p) {
  struct client *self = (struct client *)p;
  struct sum_ctx ctx;
  ctx.slots = (int64_t *)calloc(MAX_N, sizeof(int64_t));
  pthread_mutex_init(&ctx.mu, NULL);
  aotk_pool_bind(self->pool);
  self->ok = 1;
  for (int rep = 0; rep < 300; rep++) {
    int64_t n = 1 + (rep * 37) % (MAX_N - 1);
    self->ok &= run_sum(n, &ctx) == n * (n + 1) / 2;
  }
  aotk_pool_bind(NULL);
  pthread_mutex_destroy(&ctx.mu);
  free(ctx.slots);
  return NULL;
}

static void test_concurrent_callers(void) {
  aotk_pool *pool = aotk_pool_create(2);
  CHECK(pool != NULL);
  struct client clients[2] = {{pool, 0}, {pool, 0}};
  pthread_t threads[2];
  for (int i = 0; i < 2; i++) CHECK(pthread_create(&threads[i], NULL, client_main, &clients[i]) == 0);
  for (int i = 0; i < 2; i++) CHECK(pthread_join(threads[i], NULL) == 0);
  CHECK(clients[0].ok && clients[1].ok);
  aotk_pool_destroy(pool);
}

static void test_create_destroy(void) {
  for (int i = 0; i < 100; i++) {
    aotk_pool *pool = aotk_pool_create(1 + i % 4);
    CHECK(pool != NULL);
    if (i % 2 == 0) { /* half of them run a loop first */
      aotk_pool *previous = aotk_pool_bind(pool);
      struct sum_ctx ctx;
      ctx.slots = (int64_t *)calloc(MAX_N, sizeof(int64_t));
      pthread_mutex_init(&ctx.mu, NULL);
      CHECK(run_sum(100, &ctx) == 5050);
      pthread_mutex_destroy(&ctx.mu);
      free(ctx.slots);
      aotk_pool_bind(previous);
    }
    aotk_pool_destroy(pool);
  }
  aotk_pool_destroy(NULL);
}

static void test_default_pool(void) {
  struct sum_ctx ctx;
  ctx.slots = (int64_t *)calloc(MAX_N, sizeof(int64_t));
  pthread_mutex_init(&ctx.mu, NULL);
  CHECK(aotk_pool_bind(NULL) == NULL);
  for (int threads = 1; threads <= 4; threads++) {
    aotk_set_default_threads(threads);
    CHECK(aotk_get_default_threads() == threads);
    CHECK(run_sum(999, &ctx) == 999 * 1000 / 2);
    check_split(&ctx, 999, threads);
  }
  aotk_set_default_threads(0);
  CHECK(aotk_get_default_threads() >= 1);
  CHECK(run_sum(77, &ctx) == 77 * 78 / 2);
  aotk_set_default_threads(1); /* frees the multi-threaded default pool */
  pthread_mutex_destroy(&ctx.mu);
  free(ctx.slots);
}

/* `pool_test threads`: the size of a pool created with n_threads 0 (an exported model's,
 * made with default options), from the environment and the affinity mask. */
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "threads") == 0) {
    aotk_pool *pool = aotk_pool_create(0);
    CHECK(pool != NULL);
    printf("%d\n", aotk_pool_threads(pool));
    aotk_pool_destroy(pool);
    return 0;
  }
  test_sums();
  test_nested();
  test_concurrent_callers();
  test_create_destroy();
  test_default_pool();
  puts("ok");
  return 0;
}
