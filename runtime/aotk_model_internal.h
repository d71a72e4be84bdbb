/* aotk runtime, internal: the model object shared by aotk_model.c and aotk_run.c. */
#ifndef AOTK_MODEL_INTERNAL_H
#define AOTK_MODEL_INTERNAL_H

#include <pthread.h>

#include "aotk_model_info_internal.h"
#include "aotk_pool_internal.h"

typedef struct aotk_workspace {
  void *data;
  size_t capacity;
  struct aotk_workspace *next;
} aotk_workspace;

struct aotk_model {
  const aotk_model_info *info;
  unsigned char *payload; /* the captured arrays, writable */
  void *owned;            /* payload copy of embedded weights, or NULL */
  void *mapped;           /* private mapping of a weights file, or NULL */
  void *packed;           /* the packed copies of weights (info->packs), or NULL */
  size_t mapped_size;
  aotk_pool *pool;
  /* Runs read the captured arrays under a read lock; anything that writes them (a
   * serialized run, set_variable) takes the write lock. */
  pthread_rwlock_t state_lock;
  pthread_mutex_t ws_lock; /* guards free_ws */
  aotk_workspace *free_ws; /* workspaces of finished runs, reused by the next ones */
  int locks_ready;
};

/* Check `t`'s dtype, rank and dims against `arg`, or against `expected_dims` if not NULL
 * (arg's dynamic dims, -1, accept any value). */
aotk_status aotk_check_shape(const char *fn, const char *kind, const aotk_arg_info *arg,
                             const aotk_tensor *t, const int64_t *expected_dims);

/* Check `t`'s data pointer, alignment and capacity for its dims. */
aotk_status aotk_check_data(const char *fn, const char *kind, const aotk_arg_info *arg,
                            const aotk_tensor *t);

#endif /* AOTK_MODEL_INTERNAL_H */
