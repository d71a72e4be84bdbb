/* aotk runtime: the C API of every library aotk exports (plain C99 + pthreads).
 *
 * An exported model `<name>` has a generated header `<name>.h` declaring
 *   aotk_status <name>_create(aotk_model **model, const aotk_options *options);
 * and a typed `<name>_run`. Everything else is this generic API, which works on any model:
 * describe each input and output with an aotk_tensor, call aotk_model_run, check the
 * status. A failed call returns a status code and leaves a message naming the function,
 * the argument, what was expected and what was given in aotk_last_error(). Nothing is
 * written to the outputs or the model's variables when a call fails its checks.
 */
#ifndef AOTK_RT_H
#define AOTK_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AOTK_API __attribute__((visibility("default")))
#else
#define AOTK_API
#endif

/* Buffers aotk allocates start on this boundary; callers' buffers need only be aligned to
 * their element size. */
#define AOTK_ALIGNMENT 64
#define AOTK_MAX_RANK 8

/* The version of this API. It grows with every change to a declaration here; a program
 * that loads a library at run time checks aotk_api_version() == AOTK_API_VERSION. */
#define AOTK_API_VERSION 2

typedef enum {
  AOTK_OK = 0,
  AOTK_ERR_NULL = 1,             /* a required pointer is NULL */
  AOTK_ERR_NO_MEMORY = 2,        /* an allocation failed */
  AOTK_ERR_ALIGNMENT = 3,        /* a buffer is not aligned to its element size */
  AOTK_ERR_ARG_COUNT = 4,        /* wrong number of inputs or outputs */
  AOTK_ERR_DTYPE = 5,            /* a tensor has the wrong element type */
  AOTK_ERR_RANK = 6,             /* a tensor has the wrong rank */
  AOTK_ERR_SHAPE = 7,            /* a static dim differs, or tied dynamic dims differ */
  AOTK_ERR_DIM_RANGE = 8,        /* a dynamic dim is outside its supported range */
  AOTK_ERR_BUFFER_SIZE = 9,      /* a buffer's capacity is smaller than its tensor */
  AOTK_ERR_NOT_FOUND = 10,       /* no variable of that name */
  AOTK_ERR_WEIGHTS_IO = 11,      /* the weights file cannot be opened or mapped */
  AOTK_ERR_WEIGHTS_FORMAT = 12,  /* not a weights file, other version, or truncated */
  AOTK_ERR_WEIGHTS_CHECKSUM = 13,/* the weights payload is corrupted */
  AOTK_ERR_WEIGHTS_MISMATCH = 14,/* the weights belong to another model */
  AOTK_ERR_CPU = 15,             /* the library needs CPU features this machine lacks */
  AOTK_ERR_THREADS = 16,         /* the thread pool could not start */
  AOTK_ERR_OVERLAP = 17,         /* an output or the workspace overlaps another buffer of the call */
  AOTK_ERR_WORKSPACE = 18,       /* a caller workspace is too small or misaligned */
  AOTK_ERR_SIZE = 19             /* the dims make a tensor or the workspace too large to address */
} aotk_status;

typedef enum {
  AOTK_BOOL = 0, /* one byte, 0 or 1 */
  AOTK_INT8 = 1,
  AOTK_INT16 = 2,
  AOTK_INT32 = 3,
  AOTK_INT64 = 4,
  AOTK_UINT8 = 5,
  AOTK_FLOAT16 = 6, /* IEEE binary16 bits in a uint16_t */
  AOTK_FLOAT32 = 7,
  AOTK_FLOAT64 = 8
} aotk_dtype;

/* A tensor: dense, row-major. `capacity` is the number of bytes available at `data`. For
 * an input, fill every field. For an output, fill `data` and `capacity`; a successful run
 * sets `dtype`, `rank` and `dims`. */
typedef struct {
  aotk_dtype dtype;
  int32_t rank;
  int64_t dims[AOTK_MAX_RANK];
  void *data;
  size_t capacity;
} aotk_tensor;

typedef struct aotk_model aotk_model;

/* Options of <name>_create; NULL means all defaults (zero-initialise to get them). */
typedef struct {
  int n_threads;            /* threads for parallel loops; <= 0: $AOTK_NUM_THREADS, else the
                               first entry of $OMP_NUM_THREADS, else one per CPU the
                               process may run on (its affinity mask, on Linux), at most
                               its cgroups' CPU quota rounded up (a container's limit) */
  const char *weights_path; /* a `<name>.weights` file; NULL: the weights built into the
                               library (a library exported with external weights needs it) */
} aotk_options;

/* A short static description of a status code. */
AOTK_API const char *aotk_status_message(aotk_status status);

/* The detailed message of the last failed aotk call on this thread ("" if none). */
AOTK_API const char *aotk_last_error(void);

/* Run the model. Inputs and outputs are in the order of the generated header. Calls may
 * come from several threads at once: each uses its own workspace. A model that writes
 * its own state on every call (a training step, random numbers) serializes its calls. */
AOTK_API aotk_status aotk_model_run(aotk_model *model, const aotk_tensor *inputs,
                                    size_t n_inputs, aotk_tensor *outputs, size_t n_outputs);

/* The same, with caller-provided workspace memory of at least aotk_model_workspace_size
 * bytes, aligned to AOTK_ALIGNMENT. */
AOTK_API aotk_status aotk_model_run_with_workspace(aotk_model *model, const aotk_tensor *inputs,
                                                   size_t n_inputs, aotk_tensor *outputs,
                                                   size_t n_outputs, void *workspace,
                                                   size_t workspace_size);

/* Check the inputs and set dtype, rank and dims of each output, without running. */
AOTK_API aotk_status aotk_model_output_shapes(aotk_model *model, const aotk_tensor *inputs,
                                              size_t n_inputs, aotk_tensor *outputs,
                                              size_t n_outputs);

/* Workspace bytes a run on these inputs needs. */
AOTK_API aotk_status aotk_model_workspace_size(aotk_model *model, const aotk_tensor *inputs,
                                               size_t n_inputs, size_t *bytes);

/* Variables (and other captured arrays, such as constants and random-number state). */
AOTK_API size_t aotk_model_num_variables(const aotk_model *model);
AOTK_API const char *aotk_model_variable_name(const aotk_model *model, size_t index);
/* Copy a variable out: sets dst's dtype, rank and dims; dst->data needs the capacity. */
AOTK_API aotk_status aotk_model_get_variable(aotk_model *model, const char *name,
                                             aotk_tensor *dst);
/* Copy a new value in: src must have the variable's dtype and shape. A weight the model
 * reads packed for its matmuls is packed again here, before the call returns. */
AOTK_API aotk_status aotk_model_set_variable(aotk_model *model, const char *name,
                                             const aotk_tensor *src);

AOTK_API int aotk_model_threads(const aotk_model *model);
AOTK_API void aotk_model_destroy(aotk_model *model); /* NULL is a no-op */

/* The AOTK_API_VERSION the library was built with. */
AOTK_API int aotk_api_version(void);

/* Size in bytes of one element of `dtype` (0 for an unknown value). */
AOTK_API size_t aotk_dtype_size(aotk_dtype dtype);

/* A zero-filled buffer of `nbytes` aligned to AOTK_ALIGNMENT, or NULL. Free with aotk_free. */
AOTK_API void *aotk_alloc(size_t nbytes);
AOTK_API void aotk_free(void *p);

/* AOTK_OK if `p` is non-NULL and AOTK_ALIGNMENT-aligned, else the matching error code. */
AOTK_API aotk_status aotk_check_buffer(const void *p);

#ifdef __cplusplus
}
#endif

#endif /* AOTK_RT_H */
