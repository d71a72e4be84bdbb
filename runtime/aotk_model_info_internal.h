/* aotk runtime, internal: what a generated model tells the runtime about itself.
 * Generated code fills one static aotk_model_info; users never see this header. */
#ifndef AOTK_MODEL_INFO_INTERNAL_H
#define AOTK_MODEL_INFO_INTERNAL_H

#include "aotk_rt.h"

typedef struct {
  const char *name;
  aotk_dtype dtype;
  int32_t rank;
  const int64_t *dims; /* -1 marks a dynamic dim */
} aotk_arg_info;

typedef struct {
  const char *name;
  aotk_dtype dtype;
  int32_t rank;
  const int64_t *dims;
  uint64_t offset; /* in the weights payload, a multiple of AOTK_ALIGNMENT */
  uint64_t nbytes;
} aotk_capture_info;

/* A packed copy of a weight the kernel reads instead of the weight (its matmuls' right
 * operand): made when the model is created and again whenever the weight is set. */
typedef struct {
  int32_t capture;   /* the weight */
  int64_t n, k;      /* its [K, N] shape */
  uint64_t offset;   /* in the model's packed area, a multiple of AOTK_ALIGNMENT */
  void (*pack)(void *packed, void *weight, int64_t n, int64_t k);
} aotk_pack_info;

/* One dynamic dim, in kernel-argument order. */
typedef struct {
  int32_t input, axis;
  int32_t tie; /* index of an earlier dynamic dim this one must equal, or -1 */
  int64_t min, max;
} aotk_dim_info;

typedef struct {
  const char *name;
  uint64_t layout_fingerprint; /* of the arrays' layout and the graph: must match the weights header */
  int32_t n_inputs, n_outputs, n_captures, n_updates, n_dims;
  const aotk_arg_info *inputs;
  const aotk_arg_info *outputs;
  const aotk_capture_info *captures;
  const int32_t *updates; /* capture written by each extra kernel output */
  const aotk_dim_info *dims;
  int32_t serialize; /* calls write model state, so they run one at a time */
  const unsigned char *embedded_weights; /* the whole weights blob, or NULL if external */
  uint64_t embedded_size;
  const char *(*missing_cpu_feature)(void); /* NULL when the CPU has them all */
  const char *target;                       /* "cpu +feature,..." for messages */
  void (*kernel)(void *const *buffers, const int64_t *dims);
  int64_t (*workspace_size)(const int64_t *dims);
  void (*output_dims)(const int64_t *dims, int64_t *out);
  int32_t n_packs;
  const aotk_pack_info *packs; /* kernel arguments after the captures */
  uint64_t packed_size;        /* bytes of all the packed copies */
} aotk_model_info;

/* The weights blob: a 64-byte little-endian header, then the 64-byte aligned payload. */
#define AOTK_WEIGHTS_MAGIC "AOTKWTS1"
#define AOTK_WEIGHTS_VERSION 1u
#define AOTK_WEIGHTS_HEADER 64u

aotk_status aotk_model_create(const aotk_model_info *info, aotk_model **out,
                              const aotk_options *options);

/* Internal helpers shared by the runtime's files. */
aotk_status aotk_fail(aotk_status status, const char *fmt, ...);
uint32_t aotk_crc32(const unsigned char *data, size_t n);
const char *aotk_dtype_name(aotk_dtype dtype);

#endif /* AOTK_MODEL_INFO_INTERNAL_H */
