/* aotk runtime: checking a call's tensors, sizing its outputs and workspace, and running. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotk_model_internal.h"

#define MAX_DIMS 64 /* dynamic dims of one model */
#define MAX_ARGS 256

static unsigned char empty_buffer[AOTK_ALIGNMENT] __attribute__((aligned(AOTK_ALIGNMENT)));

/* Bytes of a tensor of `dims`, or SIZE_MAX if that overflows. */
static size_t tensor_bytes(aotk_dtype dtype, int32_t rank, const int64_t *dims) {
  size_t n = aotk_dtype_size(dtype);
  for (int32_t a = 0; a < rank; a++) {
    if (dims[a] < 0) return SIZE_MAX;
    if (dims[a] != 0 && n > SIZE_MAX / (size_t)dims[a]) return SIZE_MAX;
    n *= (size_t)dims[a];
  }
  return n;
}

aotk_status aotk_check_shape(const char *fn, const char *kind, const aotk_arg_info *arg,
                             const aotk_tensor *t, const int64_t *expected_dims) {
  if (t->dtype != arg->dtype)
    return aotk_fail(AOTK_ERR_DTYPE, "%s: %s '%s' expects dtype %s, got %s", fn, kind, arg->name,
                     aotk_dtype_name(arg->dtype), aotk_dtype_name(t->dtype));
  if (t->rank != arg->rank)
    return aotk_fail(AOTK_ERR_RANK, "%s: %s '%s' expects rank %d, got %d", fn, kind, arg->name,
                     (int)arg->rank, (int)t->rank);
  for (int32_t a = 0; a < arg->rank; a++) {
    int64_t want = expected_dims != NULL ? expected_dims[a] : arg->dims[a];
    if (want >= 0 && t->dims[a] != want)
      return aotk_fail(AOTK_ERR_SHAPE, "%s: %s '%s' dim %d: expected %lld, got %lld", fn, kind,
                       arg->name, (int)a, (long long)want, (long long)t->dims[a]);
    if (t->dims[a] < 0)
      return aotk_fail(AOTK_ERR_DIM_RANGE, "%s: %s '%s' dim %d is negative (%lld)", fn, kind,
                       arg->name, (int)a, (long long)t->dims[a]);
  }
  return AOTK_OK;
}

aotk_status aotk_check_data(const char *fn, const char *kind, const aotk_arg_info *arg,
                            const aotk_tensor *t) {
  size_t need = tensor_bytes(t->dtype, t->rank, t->dims);
  if (need == SIZE_MAX)
    return aotk_fail(AOTK_ERR_DIM_RANGE, "%s: %s '%s' is too large to address", fn, kind,
                     arg->name);
  if (t->data == NULL && need > 0)
    return aotk_fail(AOTK_ERR_NULL, "%s: %s '%s' has a NULL data pointer", fn, kind, arg->name);
  if ((uintptr_t)t->data % aotk_dtype_size(t->dtype) != 0)
    return aotk_fail(AOTK_ERR_ALIGNMENT, "%s: %s '%s' data %p is not aligned to %zu bytes", fn,
                     kind, arg->name, t->data, aotk_dtype_size(t->dtype));
  if (t->capacity < need)
    return aotk_fail(AOTK_ERR_BUFFER_SIZE, "%s: %s '%s' needs %zu bytes, its capacity is %zu", fn,
                     kind, arg->name, need, t->capacity);
  return AOTK_OK;
}

/* The model's dynamic dims from the inputs, checked against their ties and ranges. */
static aotk_status gather_dims(const aotk_model_info *info, const aotk_tensor *inputs,
                               int64_t *dims, const char *fn) {
  for (int32_t d = 0; d < info->n_dims; d++) {
    const aotk_dim_info *di = &info->dims[d];
    const char *name = info->inputs[di->input].name;
    dims[d] = inputs[di->input].dims[di->axis];
    if (dims[d] < di->min || dims[d] > di->max)
      return aotk_fail(AOTK_ERR_DIM_RANGE, "%s: input '%s' dim %d is %lld, outside [%lld, %lld]",
                       fn, name, (int)di->axis, (long long)dims[d], (long long)di->min,
                       (long long)di->max);
    if (di->tie >= 0 && dims[d] != dims[di->tie]) {
      const aotk_dim_info *other = &info->dims[di->tie];
      return aotk_fail(AOTK_ERR_SHAPE, "%s: input '%s' dim %d is %lld but must equal input '%s' "
                       "dim %d, which is %lld", fn, name, (int)di->axis, (long long)dims[d],
                       info->inputs[other->input].name, (int)other->axis,
                       (long long)dims[di->tie]);
    }
  }
  return AOTK_OK;
}

static aotk_status size_overflow(const aotk_model_info *info, const int64_t *dims,
                                 const char *fn) {
  char given[256] = "";
  size_t used = 0;
  for (int32_t d = 0; d < info->n_dims && used < sizeof given - 1; d++) {
    int n = snprintf(given + used, sizeof given - used, "%s%s dim %d = %lld", d ? ", " : "",
                     info->inputs[info->dims[d].input].name, (int)info->dims[d].axis,
                     (long long)dims[d]);
    if (n < 0) break;
    used += (size_t)n;
  }
  return aotk_fail(AOTK_ERR_SIZE, "%s: size overflows: at %s the model's tensors or workspace "
                   "exceed any addressable size", fn, given);
}

/* Check the inputs, read the dynamic dims from them and size the workspace they need; the
 * generated size function says -1 when some buffer's size would overflow at these dims. */
static aotk_status check_inputs(aotk_model *m, const aotk_tensor *inputs, size_t n_inputs,
                                int64_t *dims, size_t *workspace, const char *fn) {
  const aotk_model_info *info = m->info;
  if (n_inputs != (size_t)info->n_inputs)
    return aotk_fail(AOTK_ERR_ARG_COUNT, "%s: model '%s' takes %d inputs, got %zu", fn,
                     info->name, (int)info->n_inputs, n_inputs);
  if (inputs == NULL && n_inputs > 0) return aotk_fail(AOTK_ERR_NULL, "%s: `inputs` is NULL", fn);
  for (int32_t i = 0; i < info->n_inputs; i++) {
    aotk_status s = aotk_check_shape(fn, "input", &info->inputs[i], &inputs[i], NULL);
    if (s != AOTK_OK) return s;
  }
  aotk_status s = gather_dims(info, inputs, dims, fn);
  for (int32_t i = 0; i < info->n_inputs && s == AOTK_OK; i++)
    s = aotk_check_data(fn, "input", &info->inputs[i], &inputs[i]);
  if (s != AOTK_OK) return s;
  int64_t bytes = info->workspace_size(dims);
  if (bytes < 0) return size_overflow(info, dims, fn);
  *workspace = (size_t)bytes;
  return AOTK_OK;
}

/* Check the outputs' buffers against the shapes the inputs give, and set their shapes. */
static aotk_status shape_outputs(aotk_model *m, const int64_t *dims, aotk_tensor *outputs,
                                 size_t n_outputs, int check_buffers, const char *fn) {
  const aotk_model_info *info = m->info;
  if (n_outputs != (size_t)info->n_outputs)
    return aotk_fail(AOTK_ERR_ARG_COUNT, "%s: model '%s' has %d outputs, got %zu", fn,
                     info->name, (int)info->n_outputs, n_outputs);
  if (outputs == NULL && n_outputs > 0) return aotk_fail(AOTK_ERR_NULL, "%s: `outputs` is NULL", fn);
  int64_t flat[MAX_DIMS * AOTK_MAX_RANK];
  info->output_dims(dims, flat);
  const int64_t *next = flat;
  for (int32_t o = 0; o < info->n_outputs; o++) {
    const aotk_arg_info *arg = &info->outputs[o];
    aotk_tensor *t = &outputs[o];
    t->dtype = arg->dtype;
    t->rank = arg->rank;
    for (int32_t a = 0; a < arg->rank; a++) t->dims[a] = *next++;
    if (check_buffers) {
      aotk_status s = aotk_check_data(fn, "output", arg, t);
      if (s != AOTK_OK) return s;
    }
  }
  return AOTK_OK;
}

/* Whether tensor `a`'s data shares a byte with the `nb` bytes at `b`. */
static int overlaps_range(const aotk_tensor *a, const void *b, size_t nb) {
  size_t na = tensor_bytes(a->dtype, a->rank, a->dims);
  if (na == 0 || nb == 0) return 0;
  uintptr_t pa = (uintptr_t)a->data, pb = (uintptr_t)b;
  return pa < pb + nb && pb < pa + na;
}

static int overlaps(const aotk_tensor *a, const aotk_tensor *b) {
  return overlaps_range(a, b->data, tensor_bytes(b->dtype, b->rank, b->dims));
}

/* A caller's workspace is written while inputs are read and outputs written: it must share
 * no byte with any of them (the `need` bytes the kernel uses). */
static aotk_status check_workspace(const aotk_model_info *info, const aotk_tensor *inputs,
                                   const aotk_tensor *outputs, const void *ws, size_t need,
                                   const char *fn) {
  for (int32_t i = 0; i < info->n_inputs; i++)
    if (overlaps_range(&inputs[i], ws, need))
      return aotk_fail(AOTK_ERR_OVERLAP, "%s: the workspace overlaps input '%s'", fn,
                       info->inputs[i].name);
  for (int32_t o = 0; o < info->n_outputs; o++)
    if (overlaps_range(&outputs[o], ws, need))
      return aotk_fail(AOTK_ERR_OVERLAP, "%s: the workspace overlaps output '%s'", fn,
                       info->outputs[o].name);
  return AOTK_OK;
}

static aotk_status check_overlaps(const aotk_model_info *info, const aotk_tensor *inputs,
                                  const aotk_tensor *outputs, const char *fn) {
  for (int32_t o = 0; o < info->n_outputs; o++) {
    for (int32_t i = 0; i < info->n_inputs; i++)
      if (overlaps(&outputs[o], &inputs[i]))
        return aotk_fail(AOTK_ERR_OVERLAP, "%s: output '%s' overlaps input '%s'", fn,
                         info->outputs[o].name, info->inputs[i].name);
    for (int32_t p = 0; p < o; p++)
      if (overlaps(&outputs[o], &outputs[p]))
        return aotk_fail(AOTK_ERR_OVERLAP, "%s: output '%s' overlaps output '%s'", fn,
                         info->outputs[o].name, info->outputs[p].name);
  }
  return AOTK_OK;
}

/* A workspace of at least `size` bytes: a finished run's if one is free, else a new one. */
static aotk_workspace *take_workspace(aotk_model *m, size_t size) {
  pthread_mutex_lock(&m->ws_lock);
  aotk_workspace *w = m->free_ws;
  if (w != NULL) m->free_ws = w->next;
  pthread_mutex_unlock(&m->ws_lock);
  if (w == NULL && (w = calloc(1, sizeof *w)) == NULL) return NULL;
  if (w->capacity < size) {
    aotk_free(w->data);
    w->data = aotk_alloc(size);
    w->capacity = w->data != NULL ? size : 0;
    if (w->data == NULL) {
      free(w);
      return NULL;
    }
  }
  return w;
}

static void give_back(aotk_model *m, aotk_workspace *w) {
  pthread_mutex_lock(&m->ws_lock);
  w->next = m->free_ws;
  m->free_ws = w;
  pthread_mutex_unlock(&m->ws_lock);
}

static void call_kernel(aotk_model *m, const aotk_tensor *inputs, aotk_tensor *outputs,
                        void *workspace, const int64_t *dims) {
  const aotk_model_info *info = m->info;
  void *buffers[MAX_ARGS];
  size_t n = 0;
  for (int32_t i = 0; i < info->n_inputs; i++)
    buffers[n++] = inputs[i].data != NULL ? inputs[i].data : empty_buffer;
  for (int32_t c = 0; c < info->n_captures; c++)
    buffers[n++] = m->payload + info->captures[c].offset;
  for (int32_t p = 0; p < info->n_packs; p++)
    buffers[n++] = (unsigned char *)m->packed + info->packs[p].offset;
  for (int32_t o = 0; o < info->n_outputs; o++)
    buffers[n++] = outputs[o].data != NULL ? outputs[o].data : empty_buffer;
  for (int32_t u = 0; u < info->n_updates; u++)
    buffers[n++] = m->payload + info->captures[info->updates[u]].offset;
  buffers[n] = workspace;
  if (info->serialize) pthread_rwlock_wrlock(&m->state_lock);
  else pthread_rwlock_rdlock(&m->state_lock);
  aotk_pool *previous = aotk_pool_bind(m->pool);
  info->kernel(buffers, dims);
  aotk_pool_bind(previous);
  pthread_rwlock_unlock(&m->state_lock);
}

static aotk_status run(aotk_model *m, const aotk_tensor *inputs, size_t n_inputs,
                       aotk_tensor *outputs, size_t n_outputs, void *ws, size_t ws_size,
                       const char *fn) {
  if (m == NULL) return aotk_fail(AOTK_ERR_NULL, "%s: `model` is NULL", fn);
  int64_t dims[MAX_DIMS];
  size_t need = 0;
  aotk_status s = check_inputs(m, inputs, n_inputs, dims, &need, fn);
  if (s == AOTK_OK) s = shape_outputs(m, dims, outputs, n_outputs, 1, fn);
  if (s == AOTK_OK) s = check_overlaps(m->info, inputs, outputs, fn);
  if (s != AOTK_OK) return s;
  if (ws != NULL) {
    if ((uintptr_t)ws % AOTK_ALIGNMENT != 0 || ws_size < need)
      return aotk_fail(AOTK_ERR_WORKSPACE, "%s: the workspace needs %zu bytes aligned to %d, "
                       "got %zu bytes at %p", fn, need, AOTK_ALIGNMENT, ws_size, ws);
    s = check_workspace(m->info, inputs, outputs, ws, need, fn);
    if (s != AOTK_OK) return s;
    call_kernel(m, inputs, outputs, ws, dims);
    return AOTK_OK;
  }
  aotk_workspace *w = take_workspace(m, need);
  if (w == NULL) return aotk_fail(AOTK_ERR_NO_MEMORY, "%s: no memory for a %zu-byte workspace",
                                  fn, need);
  call_kernel(m, inputs, outputs, w->data, dims);
  give_back(m, w);
  return AOTK_OK;
}

aotk_status aotk_model_run(aotk_model *m, const aotk_tensor *inputs, size_t n_inputs,
                           aotk_tensor *outputs, size_t n_outputs) {
  return run(m, inputs, n_inputs, outputs, n_outputs, NULL, 0, "aotk_model_run");
}

aotk_status aotk_model_run_with_workspace(aotk_model *m, const aotk_tensor *inputs,
                                          size_t n_inputs, aotk_tensor *outputs,
                                          size_t n_outputs, void *workspace,
                                          size_t workspace_size) {
  const char *fn = "aotk_model_run_with_workspace";
  if (workspace == NULL) return aotk_fail(AOTK_ERR_NULL, "%s: `workspace` is NULL", fn);
  return run(m, inputs, n_inputs, outputs, n_outputs, workspace, workspace_size, fn);
}

aotk_status aotk_model_output_shapes(aotk_model *m, const aotk_tensor *inputs, size_t n_inputs,
                                     aotk_tensor *outputs, size_t n_outputs) {
  const char *fn = "aotk_model_output_shapes";
  if (m == NULL) return aotk_fail(AOTK_ERR_NULL, "%s: `model` is NULL", fn);
  int64_t dims[MAX_DIMS];
  size_t workspace;
  aotk_status s = check_inputs(m, inputs, n_inputs, dims, &workspace, fn);
  return s != AOTK_OK ? s : shape_outputs(m, dims, outputs, n_outputs, 0, fn);
}

aotk_status aotk_model_workspace_size(aotk_model *m, const aotk_tensor *inputs, size_t n_inputs,
                                      size_t *bytes) {
  const char *fn = "aotk_model_workspace_size";
  if (m == NULL || bytes == NULL)
    return aotk_fail(AOTK_ERR_NULL, "%s: `%s` is NULL", fn, m == NULL ? "model" : "bytes");
  int64_t dims[MAX_DIMS];
  return check_inputs(m, inputs, n_inputs, dims, bytes, fn);
}
