/* aotk thread pool (see aotk_pool_internal.h): plain C99 + pthreads, libc only.
 *
 * A loop of n iterations is cut into at most AOTK_CHUNKS_PER_THREAD chunks per thread,
 * by n and the pool's size alone: the iterations are shared out evenly among the
 * threads, each thread's share evenly among its chunks. Thread t owns that contiguous
 * run of chunks and runs them first; a thread with none left takes the unstarted chunks
 * of the others, so a thread the OS has descheduled (a busy machine) delays a loop by
 * one chunk, not by its share. Which thread runs a chunk never changes what the chunk
 * computes.
 *
 * A loop is published under the pool's mutex with a new `generation`; chunks are claimed
 * from per-owner tickets tagged with it (so a late thread cannot claim from a newer
 * loop), and the caller waits until every chunk is finished. Both sides spin for a short
 * while, yielding the core, before sleeping on a condition variable, so back-to-back
 * loops of one kernel do not pay a futex wake-up each. Counters use the GCC/Clang
 * __atomic builtins; without them, claims take the mutex and nobody spins.
 */
#define _POSIX_C_SOURCE 200809L

#include "aotk_pool_internal.h"

#include "aotk_cpus_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#define AOTK_CHUNKS_PER_THREAD 4
/* How long an idle worker (or a waiting caller) polls before it sleeps. */
#define AOTK_SPIN_NS 100000L

#if defined(__GNUC__) || defined(__clang__)
#define AOTK_ATOMICS 1
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define INCREMENT(p) __atomic_add_fetch((p), 1, __ATOMIC_ACQ_REL)
#define CAS(p, expected, desired) \
  __atomic_compare_exchange_n((p), (expected), (desired), 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
#else
#define AOTK_ATOMICS 0
#define LOAD(p) (*(p))
#define STORE(p, v) (*(p) = (v))
#define INCREMENT(p) (++*(p))
#endif

struct worker {
  aotk_pool *pool;
  int index;
};

/* One loop, as a thread copies it (under the mutex) when it joins. */
struct job {
  aotk_task_fn fn;
  void *ctx;
  int64_t n;
  int chunks;    /* chunks in all, shared out among the threads as evenly as n */
  int owners;    /* the pool's threads */
  uint64_t tag;  /* generation, in the high half of every ticket */
};

struct aotk_pool {
  int n_threads;
  int n_started; /* workers running */
  pthread_t *threads;
  struct worker *workers;
  uint64_t *tickets; /* per owner: tag << 32 | chunks of its run claimed so far */
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* a new generation, or stop */
  pthread_cond_t done_cv; /* every chunk finished */
  struct job job;         /* written under mu, before generation moves */
  unsigned long generation;
  int finished; /* chunks of the current job done */
  int stop;
  int busy; /* under mu: a loop is running */
  /* Default-pool bookkeeping, under g_mu. */
  int users;
  int retired;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static aotk_pool *g_default = NULL;
static int g_requested = 0;
static int g_requested_set = 0;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key;
static int g_key_ok = 0;

static void make_key(void) { g_key_ok = pthread_key_create(&g_key, NULL) == 0; }

static void cpu_relax(void) {
#if AOTK_ATOMICS && (defined(__x86_64__) || defined(__i386__))
  __builtin_ia32_pause();
#elif AOTK_ATOMICS && defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

/* Poll until `*word` differs from `old` (or *stop is set) or AOTK_SPIN_NS pass, yielding
 * the core now and then so a spinner never starves a thread that has work; 1 if it did. */
static int spin_until_changed(const unsigned long *word, unsigned long old, const int *stop) {
#if AOTK_ATOMICS
  long deadline = now_ns() + AOTK_SPIN_NS;
  for (int i = 1;; i++) {
    if (LOAD(word) != old || LOAD(stop)) return 1;
    cpu_relax();
    if (i % 64 == 0) {
      if (now_ns() > deadline) return 0;
      sched_yield();
    }
  }
#else
  (void)word, (void)old, (void)stop;
  return 0;
#endif
}

static int spin_until_equal(const int *word, int value) {
#if AOTK_ATOMICS
  long deadline = now_ns() + AOTK_SPIN_NS;
  for (int i = 1;; i++) {
    if (LOAD(word) == value) return 1;
    cpu_relax();
    if (i % 64 == 0) {
      if (now_ns() > deadline) return 0;
      sched_yield();
    }
  }
#else
  (void)word, (void)value;
  return 0;
#endif
}

/* Part i of [0, n) cut into `parts` contiguous parts, the first n % parts one longer. */
static void part(int64_t n, int64_t parts, int64_t i, int64_t *begin, int64_t *count) {
  int64_t base = n / parts, extra = n % parts;
  *begin = i * base + (i < extra ? i : extra);
  *count = base + (i < extra ? 1 : 0);
}

/* The part of [0, n) cut as `part` does that holds x. */
static int64_t part_of(int64_t n, int64_t parts, int64_t x) {
  int64_t base = n / parts, extra = n % parts, long_end = extra * (base + 1);
  return x < long_end ? x / (base + 1) : extra + (x - long_end) / base;
}

/* Chunk i: a part of its owner's share of the iterations. Chunks cut straight from
 * [0, n) had given one thread's run 12 of 22 iterations and the other's 10. The shares
 * hold at least as many iterations as chunks (chunks <= n), so no chunk is empty. */
static void run_chunk(const struct job *job, int i) {
  int64_t owner = part_of(job->chunks, job->owners, i);
  int64_t first_chunk, own_chunks, first, share, begin, count;
  part(job->chunks, job->owners, owner, &first_chunk, &own_chunks);
  part(job->n, job->owners, owner, &first, &share);
  part(share, own_chunks, i - first_chunk, &begin, &count);
  job->fn(job->ctx, first + begin, first + begin + count);
}

/* The next unclaimed chunk of `owner`'s run in `job`, or -1. */
static int claim(aotk_pool *pool, const struct job *job, int owner) {
  int64_t first64, count64;
  part(job->chunks, job->owners, owner, &first64, &count64);
  int first = (int)first64, count = (int)count64;
  uint64_t *ticket = &pool->tickets[owner];
#if AOTK_ATOMICS
  uint64_t seen = LOAD(ticket);
  while (seen >> 32 == job->tag && (int)(seen & 0xffffffffu) < count) {
    if (CAS(ticket, &seen, seen + 1)) return first + (int)(seen & 0xffffffffu);
  }
  return -1;
#else
  int got = -1;
  pthread_mutex_lock(&pool->mu);
  if (*ticket >> 32 == job->tag && (int)(*ticket & 0xffffffffu) < count) {
    got = first + (int)(*ticket & 0xffffffffu);
    *ticket += 1;
  }
  pthread_mutex_unlock(&pool->mu);
  return got;
#endif
}

/* Count a finished chunk. Only the last one takes the mutex, to wake a caller that sleeps
 * (it checks `finished` under the mutex first): a lock per chunk had the two threads of a
 * small loop queue on it, at microseconds a loop. */
static void finish_chunk(aotk_pool *pool, const struct job *job) {
#if AOTK_ATOMICS
  if (INCREMENT(&pool->finished) != job->chunks) return;
  pthread_mutex_lock(&pool->mu);
  pthread_cond_signal(&pool->done_cv);
  pthread_mutex_unlock(&pool->mu);
#else
  pthread_mutex_lock(&pool->mu);
  if (INCREMENT(&pool->finished) == job->chunks) pthread_cond_signal(&pool->done_cv);
  pthread_mutex_unlock(&pool->mu);
#endif
}

/* Run thread `self`'s own chunks, then whatever the others have not started. */
static void work(aotk_pool *pool, const struct job *job, int self) {
  for (int k = 0; k < pool->n_threads; k++) {
    int owner = (self + k) % pool->n_threads;
    for (int c = claim(pool, job, owner); c >= 0; c = claim(pool, job, owner)) {
      run_chunk(job, c);
      finish_chunk(pool, job);
    }
  }
}

static void *worker_main(void *arg) {
  struct worker *self = (struct worker *)arg;
  aotk_pool *pool = self->pool;
  /* A task that calls aotk_parallel_for finds this pool busy and runs inline. */
  aotk_pool_bind(pool);
  unsigned long seen = 0;
  for (;;) {
    spin_until_changed(&pool->generation, seen, &pool->stop);
    pthread_mutex_lock(&pool->mu);
    while (LOAD(&pool->generation) == seen && !LOAD(&pool->stop))
      pthread_cond_wait(&pool->work_cv, &pool->mu);
    if (LOAD(&pool->stop)) {
      pthread_mutex_unlock(&pool->mu);
      break;
    }
    seen = LOAD(&pool->generation);
    struct job job = pool->job;
    pthread_mutex_unlock(&pool->mu);
    work(pool, &job, self->index);
  }
  return NULL;
}
static void stop_workers(aotk_pool *pool) {
  pthread_mutex_lock(&pool->mu);
  STORE(&pool->stop, 1);
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mu);
  for (int i = 0; i < pool->n_started; i++) pthread_join(pool->threads[i], NULL);
  pool->n_started = 0;
}

static void free_pool(aotk_pool *pool) {
  pthread_cond_destroy(&pool->done_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->mu);
  free(pool->threads);
  free(pool->workers);
  free(pool->tickets);
  free(pool);
}

aotk_pool *aotk_pool_create(int n_threads) {
  pthread_once(&g_key_once, make_key);
  aotk_pool *pool = (aotk_pool *)calloc(1, sizeof *pool);
  if (pool == NULL) return NULL;
  pool->n_threads = aotk_resolve_threads(n_threads);
  int n_workers = pool->n_threads - 1;
  pool->threads = (pthread_t *)calloc((size_t)n_workers + 1, sizeof *pool->threads);
  pool->workers = (struct worker *)calloc((size_t)n_workers + 1, sizeof *pool->workers);
  pool->tickets = (uint64_t *)calloc((size_t)pool->n_threads, sizeof *pool->tickets);
  if (pool->threads == NULL || pool->workers == NULL || pool->tickets == NULL) {
    free(pool->threads);
    free(pool->workers);
    free(pool->tickets);
    free(pool);
    return NULL;
  }
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);
  for (int i = 0; i < n_workers; i++) {
    pool->workers[i].pool = pool;
    pool->workers[i].index = i + 1;
    if (pthread_create(&pool->threads[i], NULL, worker_main, &pool->workers[i]) != 0) {
      stop_workers(pool);
      free_pool(pool);
      return NULL;
    }
    pool->n_started = i + 1;
  }
  return pool;
}

void aotk_pool_destroy(aotk_pool *pool) {
  if (pool == NULL) return;
  stop_workers(pool);
  free_pool(pool);
}

int aotk_pool_threads(const aotk_pool *pool) { return pool == NULL ? 1 : pool->n_threads; }

aotk_pool *aotk_pool_bind(aotk_pool *pool) {
  pthread_once(&g_key_once, make_key);
  if (!g_key_ok) return NULL;
  aotk_pool *previous = (aotk_pool *)pthread_getspecific(g_key);
  pthread_setspecific(g_key, pool);
  return previous;
}

/* Under g_mu: the size the default pool has, or will have when it is created. */
static int default_size_locked(void) {
  if (g_default != NULL) return g_default->n_threads;
  return aotk_resolve_threads(g_requested_set ? g_requested : 0);
}

void aotk_set_default_threads(int n) {
  aotk_pool *doomed = NULL;
  pthread_mutex_lock(&g_mu);
  g_requested = n;
  g_requested_set = 1;
  if (g_default != NULL && g_default->n_threads != aotk_resolve_threads(n)) {
    /* Loops may still run on it: the last one out frees it (release_default). */
    g_default->retired = 1;
    if (g_default->users == 0) doomed = g_default;
    g_default = NULL;
  }
  pthread_mutex_unlock(&g_mu);
  aotk_pool_destroy(doomed);
}

int aotk_get_default_threads(void) {
  pthread_mutex_lock(&g_mu);
  int n = default_size_locked();
  pthread_mutex_unlock(&g_mu);
  return n;
}

static aotk_pool *acquire_default(void) {
  pthread_mutex_lock(&g_mu);
  if (g_default == NULL) g_default = aotk_pool_create(default_size_locked());
  aotk_pool *pool = g_default;
  if (pool != NULL) pool->users++;
  pthread_mutex_unlock(&g_mu);
  return pool;
}

static void release_default(aotk_pool *pool) {
  pthread_mutex_lock(&g_mu);
  int doomed = --pool->users == 0 && pool->retired;
  pthread_mutex_unlock(&g_mu);
  if (doomed) aotk_pool_destroy(pool);
}

/* Publish a loop on an idle pool into `job`; 0 if the pool is busy (run it inline). */
static int try_start(aotk_pool *pool, aotk_task_fn fn, void *ctx, int64_t n, struct job *job) {
  pthread_mutex_lock(&pool->mu);
  if (pool->busy) {
    pthread_mutex_unlock(&pool->mu);
    return 0;
  }
  pool->busy = 1;
  int most = pool->n_threads * AOTK_CHUNKS_PER_THREAD;
  job->fn = fn;
  job->ctx = ctx;
  job->n = n;
  job->chunks = n < most ? (int)n : most;
  job->owners = pool->n_threads;
  job->tag = (pool->generation + 1) & 0xffffffffu;
  for (int t = 0; t < pool->n_threads; t++) STORE(&pool->tickets[t], job->tag << 32);
  STORE(&pool->finished, 0);
  pool->job = *job;
  STORE(&pool->generation, pool->generation + 1);
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mu);
  return 1;
}

static void wait_and_finish(aotk_pool *pool, int chunks) {
  int done = spin_until_equal(&pool->finished, chunks);
  pthread_mutex_lock(&pool->mu);
  if (!done) {
    while (LOAD(&pool->finished) != chunks) pthread_cond_wait(&pool->done_cv, &pool->mu);
  }
  pool->busy = 0;
  pthread_mutex_unlock(&pool->mu);
}

int64_t aotk_parallel_width(void) {
  pthread_once(&g_key_once, make_key);
  aotk_pool *pool = g_key_ok ? (aotk_pool *)pthread_getspecific(g_key) : NULL;
  return pool != NULL ? pool->n_threads : aotk_get_default_threads();
}

void aotk_parallel_for(aotk_task_fn fn, void *ctx, int64_t n) {
  if (n <= 0) return;
  pthread_once(&g_key_once, make_key);
  aotk_pool *pool = g_key_ok ? (aotk_pool *)pthread_getspecific(g_key) : NULL;
  int shared = pool == NULL;
  if (shared) pool = acquire_default();
  struct job job;
  if (pool == NULL || pool->n_threads == 1 || n == 1 || !try_start(pool, fn, ctx, n, &job)) {
    fn(ctx, 0, n);
  } else {
    work(pool, &job, 0);
    wait_and_finish(pool, job.chunks);
  }
  if (shared && pool != NULL) release_default(pool);
}
