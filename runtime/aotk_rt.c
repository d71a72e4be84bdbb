/* aotk runtime: status messages, per-thread error text, dtypes, aligned buffers, CRC-32. */
#define _POSIX_C_SOURCE 200809L
#include "aotk_rt.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aotk_model_info_internal.h"

#define AOTK_MESSAGE_SIZE 512

static pthread_key_t error_key;
static pthread_once_t error_once = PTHREAD_ONCE_INIT;
static int error_key_ok;

static void make_error_key(void) { error_key_ok = pthread_key_create(&error_key, free) == 0; }

/* This thread's message buffer, made on first use; NULL if that is impossible. */
static char *error_buffer(void) {
  pthread_once(&error_once, make_error_key);
  if (!error_key_ok) return NULL;
  char *buf = pthread_getspecific(error_key);
  if (buf == NULL) {
    buf = calloc(1, AOTK_MESSAGE_SIZE);
    if (buf != NULL && pthread_setspecific(error_key, buf) != 0) {
      free(buf);
      buf = NULL;
    }
  }
  return buf;
}

aotk_status aotk_fail(aotk_status status, const char *fmt, ...) {
  char *buf = error_buffer();
  if (buf != NULL) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, AOTK_MESSAGE_SIZE, fmt, args);
    va_end(args);
  }
  return status;
}

const char *aotk_last_error(void) {
  const char *buf = error_buffer();
  return buf != NULL ? buf : "aotk: no memory for an error message";
}

const char *aotk_status_message(aotk_status status) {
  switch (status) {
    case AOTK_OK: return "ok";
    case AOTK_ERR_NULL: return "a required pointer is NULL";
    case AOTK_ERR_NO_MEMORY: return "out of memory";
    case AOTK_ERR_ALIGNMENT: return "a buffer is not aligned";
    case AOTK_ERR_ARG_COUNT: return "wrong number of inputs or outputs";
    case AOTK_ERR_DTYPE: return "wrong element type";
    case AOTK_ERR_RANK: return "wrong rank";
    case AOTK_ERR_SHAPE: return "wrong shape";
    case AOTK_ERR_DIM_RANGE: return "a dynamic dim is out of range";
    case AOTK_ERR_BUFFER_SIZE: return "a buffer is too small";
    case AOTK_ERR_NOT_FOUND: return "no such variable";
    case AOTK_ERR_WEIGHTS_IO: return "cannot read the weights file";
    case AOTK_ERR_WEIGHTS_FORMAT: return "not a valid weights file";
    case AOTK_ERR_WEIGHTS_CHECKSUM: return "the weights are corrupted";
    case AOTK_ERR_WEIGHTS_MISMATCH: return "the weights belong to another model";
    case AOTK_ERR_CPU: return "this CPU lacks features the library was built for";
    case AOTK_ERR_THREADS: return "cannot start threads";
    case AOTK_ERR_OVERLAP: return "an output or the workspace overlaps another buffer";
    case AOTK_ERR_WORKSPACE: return "the workspace is too small or misaligned";
    case AOTK_ERR_SIZE: return "a size overflows";
  }
  return "unknown aotk status";
}

int aotk_api_version(void) { return AOTK_API_VERSION; }

size_t aotk_dtype_size(aotk_dtype dtype) {
  switch (dtype) {
    case AOTK_BOOL: case AOTK_INT8: case AOTK_UINT8: return 1;
    case AOTK_INT16: case AOTK_FLOAT16: return 2;
    case AOTK_INT32: case AOTK_FLOAT32: return 4;
    case AOTK_INT64: case AOTK_FLOAT64: return 8;
  }
  return 0;
}

const char *aotk_dtype_name(aotk_dtype dtype) {
  static const char *const names[] = {"bool",  "int8",    "int16",   "int32",  "int64",
                                      "uint8", "float16", "float32", "float64"};
  return (unsigned)dtype < sizeof names / sizeof names[0] ? names[dtype] : "unknown dtype";
}

void *aotk_alloc(size_t nbytes) {
  /* Round up: aligned_alloc wants a multiple of the alignment, and 0 bytes may give NULL. */
  size_t rounded = (nbytes + AOTK_ALIGNMENT - 1) / AOTK_ALIGNMENT * AOTK_ALIGNMENT;
  if (rounded == 0) rounded = AOTK_ALIGNMENT;
  if (rounded < nbytes) return NULL; /* overflow */
  void *p = NULL;
  if (posix_memalign(&p, AOTK_ALIGNMENT, rounded) != 0) return NULL;
  memset(p, 0, rounded);
  return p;
}

void aotk_free(void *p) { free(p); }

aotk_status aotk_check_buffer(const void *p) {
  if (p == NULL) return AOTK_ERR_NULL;
  if ((uintptr_t)p % AOTK_ALIGNMENT != 0) return AOTK_ERR_ALIGNMENT;
  return AOTK_OK;
}

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void make_crc_table(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[n] = c;
  }
}

/* CRC-32 (IEEE 802.3, as zlib computes it). */
uint32_t aotk_crc32(const unsigned char *data, size_t n) {
  pthread_once(&crc_once, make_crc_table);
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ data[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}
