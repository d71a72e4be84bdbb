/* aotk runtime: model objects (create, destroy), their weights, and variables by name. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aotk_model_info_internal.h"
#include "aotk_model_internal.h"
#include "aotk_pool_internal.h"

static uint32_t read_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t read_u64(const unsigned char *p) {
  return (uint64_t)read_u32(p) | (uint64_t)read_u32(p + 4) << 32;
}

/* Check a weights blob (header + payload) of `size` bytes against the model it is for. */
static aotk_status check_weights(const aotk_model_info *info, const unsigned char *blob,
                                 uint64_t size, const char *source) {
  const char *fn = "aotk_model_create";
  if (size < AOTK_WEIGHTS_HEADER || memcmp(blob, AOTK_WEIGHTS_MAGIC, 8) != 0)
    return aotk_fail(AOTK_ERR_WEIGHTS_FORMAT, "%s: %s is not an aotk weights file (%llu bytes)",
                     fn, source, (unsigned long long)size);
  uint32_t version = read_u32(blob + 8), count = read_u32(blob + 12);
  uint64_t payload = read_u64(blob + 16), fingerprint = read_u64(blob + 24);
  if (version != AOTK_WEIGHTS_VERSION)
    return aotk_fail(AOTK_ERR_WEIGHTS_FORMAT, "%s: %s has format version %u, expected %u", fn,
                     source, version, AOTK_WEIGHTS_VERSION);
  if (payload != size - AOTK_WEIGHTS_HEADER)
    return aotk_fail(AOTK_ERR_WEIGHTS_FORMAT,
                     "%s: %s is truncated or padded: header says %llu payload bytes, has %llu",
                     fn, source, (unsigned long long)payload,
                     (unsigned long long)(size - AOTK_WEIGHTS_HEADER));
  if (fingerprint != info->layout_fingerprint || count != (uint32_t)info->n_captures)
    return aotk_fail(AOTK_ERR_WEIGHTS_MISMATCH,
                     "%s: %s holds %u arrays of another model or layout, not the weights of "
                     "model '%s'",
                     fn, source, count, info->name);
  uint32_t want = read_u32(blob + 32), got = aotk_crc32(blob + AOTK_WEIGHTS_HEADER, payload);
  if (want != got)
    return aotk_fail(AOTK_ERR_WEIGHTS_CHECKSUM,
                     "%s: %s is corrupted: payload CRC-32 is %08x, header says %08x", fn, source,
                     got, want);
  return AOTK_OK;
}

/* Map a weights file privately: the model may write its copy, the file never changes. */
static aotk_status map_weights(aotk_model *m, const char *path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return aotk_fail(AOTK_ERR_WEIGHTS_IO, "aotk_model_create: cannot open '%s'", path);
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return aotk_fail(AOTK_ERR_WEIGHTS_FORMAT, "aotk_model_create: '%s' is empty", path);
  }
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED)
    return aotk_fail(AOTK_ERR_WEIGHTS_IO, "aotk_model_create: cannot map '%s'", path);
  m->mapped = p;
  m->mapped_size = (size_t)st.st_size;
  aotk_status s = check_weights(m->info, p, (uint64_t)st.st_size, path);
  m->payload = (unsigned char *)p + AOTK_WEIGHTS_HEADER;
  return s;
}

static aotk_status copy_embedded(aotk_model *m) {
  const aotk_model_info *info = m->info;
  if (info->embedded_weights == NULL)
    return aotk_fail(AOTK_ERR_WEIGHTS_IO,
                     "aotk_model_create: model '%s' was exported with external weights; "
                     "set options.weights_path to its .weights file", info->name);
  aotk_status s = check_weights(info, info->embedded_weights, info->embedded_size,
                                "the embedded weights");
  if (s != AOTK_OK) return s;
  m->owned = aotk_alloc(info->embedded_size - AOTK_WEIGHTS_HEADER);
  if (m->owned == NULL)
    return aotk_fail(AOTK_ERR_NO_MEMORY, "aotk_model_create: no memory for %llu weight bytes",
                     (unsigned long long)(info->embedded_size - AOTK_WEIGHTS_HEADER));
  memcpy(m->owned, info->embedded_weights + AOTK_WEIGHTS_HEADER,
         info->embedded_size - AOTK_WEIGHTS_HEADER);
  m->payload = m->owned;
  return AOTK_OK;
}

/* Pack the copies made from `capture` (all of them when it is negative), on the model's
 * threads. The caller holds the state lock for writing, or has not shared the model. */
static void repack(aotk_model *m, int32_t capture) {
  const aotk_model_info *info = m->info;
  aotk_pool *previous = aotk_pool_bind(m->pool);
  for (int32_t i = 0; i < info->n_packs; i++) {
    const aotk_pack_info *p = &info->packs[i];
    if (capture >= 0 && p->capture != capture) continue;
    p->pack((unsigned char *)m->packed + p->offset, m->payload + info->captures[p->capture].offset,
            p->n, p->k);
  }
  aotk_pool_bind(previous);
}

static aotk_status init_model(aotk_model *m, const aotk_options *options) {
  const char *path = options != NULL ? options->weights_path : NULL;
  aotk_status s = path != NULL ? map_weights(m, path) : copy_embedded(m);
  if (s != AOTK_OK) return s;
  m->pool = aotk_pool_create(options != NULL ? options->n_threads : 0);
  if (m->pool == NULL)
    return aotk_fail(AOTK_ERR_THREADS, "aotk_model_create: cannot start the thread pool");
  if (pthread_rwlock_init(&m->state_lock, NULL) != 0 || pthread_mutex_init(&m->ws_lock, NULL) != 0)
    return aotk_fail(AOTK_ERR_THREADS, "aotk_model_create: cannot create locks");
  m->locks_ready = 1;
  if (m->info->n_packs > 0) {
    m->packed = aotk_alloc(m->info->packed_size);
    if (m->packed == NULL)
      return aotk_fail(AOTK_ERR_NO_MEMORY, "aotk_model_create: no memory for %llu bytes of "
                       "packed weights", (unsigned long long)m->info->packed_size);
    repack(m, -1);
  }
  return AOTK_OK;
}

aotk_status aotk_model_create(const aotk_model_info *info, aotk_model **out,
                              const aotk_options *options) {
  if (out == NULL) return aotk_fail(AOTK_ERR_NULL, "%s_create: `model` is NULL", info->name);
  *out = NULL;
  const char *missing = info->missing_cpu_feature ? info->missing_cpu_feature() : NULL;
  if (missing != NULL)
    return aotk_fail(AOTK_ERR_CPU,
                     "%s_create: the library was built for %s; this CPU lacks '%s'",
                     info->name, info->target, missing);
  aotk_model *m = calloc(1, sizeof *m);
  if (m == NULL) return aotk_fail(AOTK_ERR_NO_MEMORY, "%s_create: out of memory", info->name);
  m->info = info;
  aotk_status s = init_model(m, options);
  if (s != AOTK_OK) {
    aotk_model_destroy(m);
    return s;
  }
  *out = m;
  return AOTK_OK;
}

void aotk_model_destroy(aotk_model *m) {
  if (m == NULL) return;
  aotk_pool_destroy(m->pool);
  for (aotk_workspace *w = m->free_ws; w != NULL;) {
    aotk_workspace *next = w->next;
    aotk_free(w->data);
    free(w);
    w = next;
  }
  if (m->mapped != NULL) munmap(m->mapped, m->mapped_size);
  aotk_free(m->owned);
  aotk_free(m->packed);
  if (m->locks_ready) {
    pthread_rwlock_destroy(&m->state_lock);
    pthread_mutex_destroy(&m->ws_lock);
  }
  free(m);
}

int aotk_model_threads(const aotk_model *m) { return m != NULL ? aotk_pool_threads(m->pool) : 0; }

size_t aotk_model_num_variables(const aotk_model *m) {
  return m != NULL ? (size_t)m->info->n_captures : 0;
}

const char *aotk_model_variable_name(const aotk_model *m, size_t index) {
  if (m == NULL || index >= (size_t)m->info->n_captures) return NULL;
  return m->info->captures[index].name;
}

static const aotk_capture_info *find_variable(aotk_model *m, const char *name, const char *fn) {
  for (int32_t i = 0; i < m->info->n_captures; i++)
    if (strcmp(m->info->captures[i].name, name) == 0) return &m->info->captures[i];
  aotk_fail(AOTK_ERR_NOT_FOUND, "%s: model '%s' has no variable '%s'", fn, m->info->name, name);
  return NULL;
}

aotk_status aotk_model_get_variable(aotk_model *m, const char *name, aotk_tensor *dst) {
  const char *fn = "aotk_model_get_variable";
  if (m == NULL || name == NULL || dst == NULL)
    return aotk_fail(AOTK_ERR_NULL, "%s: `%s` is NULL", fn,
                     m == NULL ? "model" : name == NULL ? "name" : "dst");
  const aotk_capture_info *v = find_variable(m, name, fn);
  if (v == NULL) return AOTK_ERR_NOT_FOUND;
  if (dst->data == NULL || dst->capacity < v->nbytes)
    return aotk_fail(dst->data == NULL ? AOTK_ERR_NULL : AOTK_ERR_BUFFER_SIZE,
                     "%s: variable '%s' needs %llu bytes, dst has %s%llu", fn, name,
                     (unsigned long long)v->nbytes, dst->data == NULL ? "a NULL buffer of " : "",
                     (unsigned long long)dst->capacity);
  dst->dtype = v->dtype;
  dst->rank = v->rank;
  for (int32_t a = 0; a < v->rank; a++) dst->dims[a] = v->dims[a];
  pthread_rwlock_rdlock(&m->state_lock);
  memcpy(dst->data, m->payload + v->offset, v->nbytes);
  pthread_rwlock_unlock(&m->state_lock);
  return AOTK_OK;
}

aotk_status aotk_model_set_variable(aotk_model *m, const char *name, const aotk_tensor *src) {
  const char *fn = "aotk_model_set_variable";
  if (m == NULL || name == NULL || src == NULL)
    return aotk_fail(AOTK_ERR_NULL, "%s: `%s` is NULL", fn,
                     m == NULL ? "model" : name == NULL ? "name" : "src");
  const aotk_capture_info *v = find_variable(m, name, fn);
  if (v == NULL) return AOTK_ERR_NOT_FOUND;
  aotk_arg_info as_arg = {v->name, v->dtype, v->rank, v->dims};
  aotk_status s = aotk_check_shape(fn, "variable", &as_arg, src, NULL);
  if (s == AOTK_OK) s = aotk_check_data(fn, "variable", &as_arg, src);
  if (s != AOTK_OK) return s;
  pthread_rwlock_wrlock(&m->state_lock);
  memcpy(m->payload + v->offset, src->data, v->nbytes);
  repack(m, (int32_t)(v - m->info->captures));
  pthread_rwlock_unlock(&m->state_lock);
  return AOTK_OK;
}
