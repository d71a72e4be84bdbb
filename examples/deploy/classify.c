/* classify.c: classify a test set with an exported aotk model (`mlp` by default), in C99.
 *
 * Usage: classify TEST_SET [WEIGHTS]
 *
 * Reads TEST_SET (written by train.py; format below), checks its shape against the model
 * with aotk_model_output_shapes, runs the model on batches of samples through the typed
 * entry mlp_run, takes the argmax of each row of class probabilities, and prints
 *   accuracy: 0.xxxx (correct/total)
 * WEIGHTS is a mlp.weights file, needed only by a model exported with external weights.
 * Exits 0 on success, 1 with one message on stderr on any error.
 *
 * Another model with one [?, features] input and one [?, classes] output: build with
 * -DMODEL_HEADER='"digits.h"' -DMODEL_RUN=digits_run -DMODEL_CREATE=digits_create.
 *
 * TEST_SET, all little endian: the magic "ATS1"; int32 n, features, classes; then
 * n * features float32 (row-major); then n int32 labels in [0, classes).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MODEL_HEADER
#define MODEL_HEADER "mlp.h"
#define MODEL_RUN mlp_run
#define MODEL_CREATE mlp_create
#endif
#define NAME_OF(f) NAME_OF_(f)
#define NAME_OF_(f) #f
#include MODEL_HEADER

#define BATCH 128
#define MAX_SAMPLES 100000000L
#define MAX_FEATURES 1000000L
#define MAX_CLASSES 100000L

typedef struct {
  int32_t n, features, classes;
  float *x;        /* n * features */
  int32_t *labels; /* n */
} test_set;

static int fail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  fputs("classify: ", stderr);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  va_end(args);
  return 1;
}

static int aotk_fail(const char *what, aotk_status status) {
  return fail("%s failed: %s (%s)", what, aotk_last_error(), aotk_status_message(status));
}

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static int32_t le_int32(const unsigned char *b) {
  uint32_t u = le32(b);
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

/* Read `count` 4-byte little-endian values into `dst` (float or int32 storage). */
static int read_words(FILE *f, void *dst, size_t count, const char *path, const char *what) {
  unsigned char *bytes = malloc(count * 4);
  size_t i;
  if (bytes == NULL) return fail("%s: out of memory for the %s", path, what);
  if (fread(bytes, 4, count, f) != count) {
    free(bytes);
    return fail("%s: file too short: the %s are incomplete", path, what);
  }
  for (i = 0; i < count; i++) {
    uint32_t u = le32(bytes + 4 * i);
    memcpy((unsigned char *)dst + 4 * i, &u, 4);
  }
  free(bytes);
  return 0;
}

static int parse_test_set(FILE *f, const char *path, test_set *set) {
  unsigned char head[16];
  size_t n;
  if (fread(head, 1, sizeof head, f) != sizeof head)
    return fail("%s: file too short for a test set header (16 bytes)", path);
  if (memcmp(head, "ATS1", 4) != 0) return fail("%s: not a test set (bad magic)", path);
  set->n = le_int32(head + 4);
  set->features = le_int32(head + 8);
  set->classes = le_int32(head + 12);
  if (set->n < 1 || set->n > MAX_SAMPLES || set->features < 1 || set->features > MAX_FEATURES ||
      set->classes < 2 || set->classes > MAX_CLASSES)
    return fail("%s: implausible header: n=%ld features=%ld classes=%ld", path, (long)set->n,
                (long)set->features, (long)set->classes);
  n = (size_t)set->n;
  set->x = malloc(n * (size_t)set->features * sizeof(float));
  set->labels = malloc(n * sizeof(int32_t));
  if (set->x == NULL || set->labels == NULL) return fail("%s: out of memory", path);
  if (read_words(f, set->x, n * (size_t)set->features, path, "features") ||
      read_words(f, set->labels, n, path, "labels"))
    return 1;
  if (fgetc(f) != EOF) return fail("%s: unexpected bytes after the labels", path);
  for (n = 0; n < (size_t)set->n; n++)
    if (set->labels[n] < 0 || set->labels[n] >= set->classes)
      return fail("%s: label %ld of sample %lu is not in [0, %ld)", path, (long)set->labels[n],
                  (unsigned long)n, (long)set->classes);
  return 0;
}

static int load_test_set(const char *path, test_set *set) {
  FILE *f = fopen(path, "rb");
  int status;
  if (f == NULL) return fail("cannot open %s: %s", path, strerror(errno));
  status = parse_test_set(f, path, set);
  if (ferror(f)) status = fail("%s: read error", path);
  fclose(f);
  return status;
}

/* Check that the model takes [?, features] and gives [?, classes]. */
static int check_model(aotk_model *model, const test_set *set) {
  aotk_tensor in, out;
  aotk_status status;
  memset(&in, 0, sizeof in);
  memset(&out, 0, sizeof out);
  in.dtype = AOTK_FLOAT32;
  in.rank = 2;
  in.dims[0] = 1;
  in.dims[1] = set->features;
  in.data = set->x;
  in.capacity = (size_t)set->features * sizeof(float);
  status = aotk_model_output_shapes(model, &in, 1, &out, 1);
  if (status != AOTK_OK) return aotk_fail("checking the test set against the model", status);
  if (out.dtype != AOTK_FLOAT32 || out.rank != 2 || out.dims[1] != set->classes)
    return fail("the model gives %ld values per sample, the test set has %ld classes",
                (long)(out.rank == 2 ? out.dims[1] : -1), (long)set->classes);
  return 0;
}

static int32_t argmax(const float *row, int32_t n) {
  int32_t best = 0, i;
  for (i = 1; i < n; i++)
    if (row[i] > row[best]) best = i;
  return best;
}

static int classify(aotk_model *model, const test_set *set, long *correct) {
  size_t classes = (size_t)set->classes;
  float *probs = malloc(BATCH * classes * sizeof(float));
  int32_t start, i;
  if (probs == NULL) return fail("out of memory for the outputs");
  *correct = 0;
  for (start = 0; start < set->n; start += BATCH) {
    int32_t batch = set->n - start < BATCH ? set->n - start : BATCH;
    const float *x = set->x + (size_t)start * (size_t)set->features;
    aotk_status status = MODEL_RUN(model, x, batch, probs, BATCH * classes);
    if (status != AOTK_OK) {
      free(probs);
      return aotk_fail(NAME_OF(MODEL_RUN), status);
    }
    for (i = 0; i < batch; i++)
      *correct += argmax(probs + (size_t)i * classes, set->classes) == set->labels[start + i];
  }
  free(probs);
  return 0;
}

int main(int argc, char **argv) {
  test_set set = {0, 0, 0, NULL, NULL};
  aotk_options options;
  aotk_model *model = NULL;
  aotk_status status;
  long correct = 0;
  int failed;
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s TEST_SET [WEIGHTS]\n", argv[0]);
    return 1;
  }
  failed = load_test_set(argv[1], &set);
  if (!failed) {
    memset(&options, 0, sizeof options);
    options.weights_path = argc == 3 ? argv[2] : NULL;
    status = MODEL_CREATE(&model, &options);
    if (status != AOTK_OK)
      failed = aotk_fail(NAME_OF(MODEL_CREATE), status);
    else
      failed = check_model(model, &set) || classify(model, &set, &correct);
  }
  if (!failed)
    printf("accuracy: %.4f (%ld/%ld)\n", (double)correct / set.n, correct, (long)set.n);
  aotk_model_destroy(model);
  free(set.x);
  free(set.labels);
  return failed ? 1 : 0;
}
