/* aotk thread pool: runs the parallel loops of compiled kernels (plain C99 + pthreads).
 *
 * Generated code calls aotk_parallel_for(fn, ctx, n), which splits [0, n) into contiguous
 * chunks (a few per thread; the split depends only on n and the pool's size) and runs
 * them on the pool's threads, the calling thread included. Kernels only parallelize loops
 * whose iterations write disjoint outputs, so results never depend on which thread runs
 * which chunk, on the number of threads, or on timing.
 *
 * A kernel uses the pool bound to its calling thread (aotk_pool_bind), else the
 * process-wide default pool, created at first use with as many threads as
 * aotk_cpus_internal.h says: AOTK_NUM_THREADS, else OMP_NUM_THREADS (its first entry),
 * else one per CPU the process may run on, at most its CPU quota. A call made while its
 * pool is busy (a nested call from inside a task, or another thread already running a
 * loop on the pool) runs serially in the caller.
 */
#ifndef AOTK_POOL_INTERNAL_H
#define AOTK_POOL_INTERNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One task: iterations [begin, end) of a loop whose state `ctx` points to. */
typedef void (*aotk_task_fn)(void *ctx, int64_t begin, int64_t end);

typedef struct aotk_pool aotk_pool;

/* A pool of n_threads threads, the caller counted (n_threads - 1 are started); n_threads
 * <= 0 means the default pool's size from the environment (above). NULL on failure. */
aotk_pool *aotk_pool_create(int n_threads);

/* Stop and join the pool's threads and free it; NULL is a no-op. The pool must be idle,
 * and bound to no thread that will still run kernels. */
void aotk_pool_destroy(aotk_pool *pool);

/* Threads a loop on `pool` is split over, the caller included. */
int aotk_pool_threads(const aotk_pool *pool);

/* Make `pool` (NULL: none) the pool that kernels called from this thread use; returns
 * the previous binding. */
aotk_pool *aotk_pool_bind(aotk_pool *pool);

/* Size the default pool: n threads, n <= 0 meaning as the environment says (above). The
 * current default pool is retired (and freed once no loop still runs on it). */
void aotk_set_default_threads(int n);

/* Threads of the default pool (as it is, or as it will be created). */
int aotk_get_default_threads(void);

/* Run fn over [0, n) split into contiguous chunks; returns when every chunk is done. */
void aotk_parallel_for(aotk_task_fn fn, void *ctx, int64_t n);

/* Threads a loop started on this thread would be split over (the bound pool's, else the
 * default pool's): kernels size their work split with it. */
int64_t aotk_parallel_width(void);

#ifdef __cplusplus
}
#endif

#endif /* AOTK_POOL_INTERNAL_H */
