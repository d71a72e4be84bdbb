/* Every error path of the aotk C API on one exported model ("errs": x, m float32 [?, 4]
 * tied on dim 0, out0 float32 [?, 3]; variables W [4, 3] and b [3]).
 *
 * usage: error_paths <external.weights> <corrupt.weights> <truncated.weights>
 *                    <other-model.weights>
 * Prints one line per case and exits 0 when every case returned its documented status. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "errs.h"
#include "expect.h"

static aotk_tensor tensor(aotk_dtype dtype, int32_t rank, int64_t d0, int64_t d1, void *data,
                          size_t capacity) {
  aotk_tensor t = {dtype, rank, {d0, d1}, data, capacity};
  return t;
}

static void run_cases(aotk_model *model) {
  static float x[8 * 4], m[8 * 4], y[8 * 3 + 1];
  static double wrong[8 * 4];
  aotk_tensor in[2] = {tensor(AOTK_FLOAT32, 2, 2, 4, x, sizeof x),
                       tensor(AOTK_FLOAT32, 2, 2, 4, m, sizeof m)};
  aotk_tensor out[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, y, sizeof y)};
  expect("good call", aotk_model_run(model, in, 2, out, 1), AOTK_OK, NULL);
  expect("output dims set", out[0].rank == 2 && out[0].dims[0] == 2 && out[0].dims[1] == 3
         ? AOTK_OK : AOTK_ERR_SHAPE, AOTK_OK, NULL);
  expect("NULL model", aotk_model_run(NULL, in, 2, out, 1), AOTK_ERR_NULL, "model");
  expect("NULL inputs", aotk_model_run(model, NULL, 2, out, 1), AOTK_ERR_NULL, "inputs");
  expect("NULL outputs", aotk_model_run(model, in, 2, NULL, 1), AOTK_ERR_NULL, "outputs");
  expect("input count", aotk_model_run(model, in, 1, out, 1), AOTK_ERR_ARG_COUNT, "takes 2");
  expect("output count", aotk_model_run(model, in, 2, out, 2), AOTK_ERR_ARG_COUNT, "has 1");
  aotk_tensor bad[2] = {in[0], in[1]};
  bad[0].data = NULL;
  expect("NULL data", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_NULL, "'x'");
  bad[0] = tensor(AOTK_FLOAT64, 2, 2, 4, wrong, sizeof wrong);
  expect("wrong dtype", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_DTYPE,
         "expects dtype float32, got float64");
  bad[0] = tensor(AOTK_FLOAT32, 1, 8, 0, x, sizeof x);
  expect("wrong rank", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_RANK,
         "expects rank 2, got 1");
  bad[0] = tensor(AOTK_FLOAT32, 2, 2, 5, x, sizeof x);
  expect("wrong static dim", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_SHAPE,
         "dim 1: expected 4, got 5");
  bad[0] = tensor(AOTK_FLOAT32, 2, 3, 4, x, sizeof x);
  expect("tied dims differ", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_SHAPE,
         "must equal input 'x' dim 0");
  bad[0] = tensor(AOTK_FLOAT32, 2, 100, 4, x, sizeof x);
  bad[1] = tensor(AOTK_FLOAT32, 2, 100, 4, m, sizeof m);
  expect("dynamic dim over its max", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_DIM_RANGE,
         "outside [0, 64]");
  bad[0] = tensor(AOTK_FLOAT32, 2, -1, 4, x, sizeof x);
  expect("negative dim", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_DIM_RANGE, "negative");
  bad[0] = tensor(AOTK_FLOAT32, 2, 2, 4, (char *)x + 1, sizeof x - 1);
  bad[1] = in[1];
  expect("misaligned input", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_ALIGNMENT,
         "not aligned to 4 bytes");
  bad[0] = tensor(AOTK_FLOAT32, 2, 2, 4, x, 31);
  expect("input buffer too small", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_BUFFER_SIZE,
         "needs 32 bytes, its capacity is 31");
  aotk_tensor small[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, y, 23)};
  expect("output buffer too small", aotk_model_run(model, in, 2, small, 1),
         AOTK_ERR_BUFFER_SIZE, "output 'out0' needs 24 bytes");
  aotk_tensor misaligned[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, (char *)y + 2, sizeof y - 2)};
  expect("misaligned output", aotk_model_run(model, in, 2, misaligned, 1), AOTK_ERR_ALIGNMENT,
         "output 'out0'");
  aotk_tensor overlap[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, m, sizeof m)};
  expect("output overlaps an input", aotk_model_run(model, in, 2, overlap, 1), AOTK_ERR_OVERLAP,
         "overlaps input 'm'");
  static unsigned char ws_small[64] __attribute__((aligned(64)));
  expect("workspace too small",
         aotk_model_run_with_workspace(model, in, 2, out, 1, ws_small, 0), AOTK_ERR_WORKSPACE,
         "workspace needs");
  static float shared[1 << 18] __attribute__((aligned(64))); /* 1 MiB: more than it needs */
  /* 16 bytes in: inside the few hundred bytes of workspace the model uses */
  aotk_tensor in_shared[2] = {tensor(AOTK_FLOAT32, 2, 2, 4, shared + 4, 32), in[1]};
  expect("workspace overlaps an input",
         aotk_model_run_with_workspace(model, in_shared, 2, out, 1, shared, sizeof shared),
         AOTK_ERR_OVERLAP, "workspace overlaps input 'x'");
  aotk_tensor out_shared[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, shared + 8, 64)};
  expect("workspace overlaps an output",
         aotk_model_run_with_workspace(model, in, 2, out_shared, 1, shared, sizeof shared),
         AOTK_ERR_OVERLAP, "workspace overlaps output 'out0'");
  expect("typed entry", errs_run(model, x, 2, m, 2, y, 6), AOTK_OK, NULL);
  expect("typed entry, small output", errs_run(model, x, 2, m, 2, y, 5), AOTK_ERR_BUFFER_SIZE,
         "needs 24 bytes");
  expect("typed entry, untied dims", errs_run(model, x, 2, m, 3, y, 9), AOTK_ERR_SHAPE,
         "must equal");
}

static void variable_cases(aotk_model *model) {
  float w[12], small[2];
  aotk_tensor t = tensor(AOTK_FLOAT32, 0, 0, 0, w, sizeof w);
  expect("get variable", aotk_model_get_variable(model, "W", &t), AOTK_OK, NULL);
  expect("get unknown variable", aotk_model_get_variable(model, "nope", &t),
         AOTK_ERR_NOT_FOUND, "no variable 'nope'");
  aotk_tensor s = tensor(AOTK_FLOAT32, 0, 0, 0, small, sizeof small);
  expect("get into a small buffer", aotk_model_get_variable(model, "W", &s),
         AOTK_ERR_BUFFER_SIZE, "needs 48 bytes");
  expect("get NULL name", aotk_model_get_variable(model, NULL, &t), AOTK_ERR_NULL, "name");
  aotk_tensor wrong = tensor(AOTK_FLOAT32, 2, 3, 4, w, sizeof w);
  expect("set with the wrong shape", aotk_model_set_variable(model, "W", &wrong), AOTK_ERR_SHAPE,
         "dim 0: expected 4, got 3");
  aotk_tensor right = tensor(AOTK_FLOAT32, 2, 4, 3, w, sizeof w);
  expect("set variable", aotk_model_set_variable(model, "W", &right), AOTK_OK, NULL);
}

/* The other entry points, and the odd values of every field of a tensor. */
static void other_entry_cases(aotk_model *model) {
  static float x[8 * 4], m[8 * 4], y[8 * 3], w[12];
  static unsigned char ws[1 << 20] __attribute__((aligned(64)));
  aotk_tensor in[2] = {tensor(AOTK_FLOAT32, 2, 2, 4, x, sizeof x),
                       tensor(AOTK_FLOAT32, 2, 2, 4, m, sizeof m)};
  aotk_tensor out[1] = {tensor(AOTK_FLOAT32, 0, 0, 0, y, sizeof y)};
  size_t bytes = 0;
  expect("shapes: NULL model", aotk_model_output_shapes(NULL, in, 2, out, 1), AOTK_ERR_NULL,
         "model");
  expect("shapes: output count", aotk_model_output_shapes(model, in, 2, out, 0),
         AOTK_ERR_ARG_COUNT, "has 1");
  expect("shapes: NULL outputs", aotk_model_output_shapes(model, in, 2, NULL, 1), AOTK_ERR_NULL,
         "outputs");
  expect("workspace: NULL bytes", aotk_model_workspace_size(model, in, 2, NULL), AOTK_ERR_NULL,
         "bytes");
  expect("workspace: NULL model", aotk_model_workspace_size(NULL, in, 2, &bytes), AOTK_ERR_NULL,
         "model");
  expect("workspace: input count", aotk_model_workspace_size(model, in, 3, &bytes),
         AOTK_ERR_ARG_COUNT, "takes 2");
  expect("with workspace: NULL workspace",
         aotk_model_run_with_workspace(model, in, 2, out, 1, NULL, 1 << 20), AOTK_ERR_NULL,
         "workspace");
  expect("with workspace: misaligned",
         aotk_model_run_with_workspace(model, in, 2, out, 1, ws + 8, sizeof ws - 8),
         AOTK_ERR_WORKSPACE, "aligned to 64");
  aotk_tensor bad[2] = {tensor(AOTK_FLOAT32, 9, 2, 4, x, sizeof x), in[1]};
  expect("rank above the maximum", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_RANK,
         "expects rank 2, got 9");
  bad[0].rank = -1;
  expect("negative rank", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_RANK, "got -1");
  bad[0] = tensor((aotk_dtype)42, 2, 2, 4, x, sizeof x);
  expect("unknown dtype", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_DTYPE, "got ");
  bad[0] = tensor(AOTK_FLOAT32, 2, (int64_t)1 << 62, 4, x, SIZE_MAX);
  expect("dim too large to address", aotk_model_run(model, bad, 2, out, 1), AOTK_ERR_DIM_RANGE,
         "outside [0, 64]");
  aotk_tensor src = tensor(AOTK_FLOAT32, 2, 4, 3, w, sizeof w);
  expect("set: NULL src", aotk_model_set_variable(model, "W", NULL), AOTK_ERR_NULL, "src");
  expect("set: NULL model", aotk_model_set_variable(NULL, "W", &src), AOTK_ERR_NULL, "model");
  expect("set: unknown name", aotk_model_set_variable(model, "V", &src), AOTK_ERR_NOT_FOUND,
         "no variable 'V'");
  src.dtype = AOTK_INT32;
  expect("set: wrong dtype", aotk_model_set_variable(model, "W", &src), AOTK_ERR_DTYPE,
         "expects dtype float32, got int32");
  src = tensor(AOTK_FLOAT32, 2, 4, 3, w, sizeof w - 4);
  expect("set: small capacity", aotk_model_set_variable(model, "W", &src), AOTK_ERR_BUFFER_SIZE,
         "needs 48 bytes");
  src = tensor(AOTK_FLOAT32, 2, 4, 3, NULL, sizeof w);
  expect("set: NULL data", aotk_model_set_variable(model, "W", &src), AOTK_ERR_NULL, "NULL data");
  expect("get: NULL dst", aotk_model_get_variable(model, "W", NULL), AOTK_ERR_NULL, "dst");
  aotk_tensor dst = tensor(AOTK_FLOAT32, 0, 0, 0, NULL, sizeof w);
  expect("get: NULL data", aotk_model_get_variable(model, "W", &dst), AOTK_ERR_NULL, "NULL");
  expect("variable index out of range",
         aotk_model_variable_name(model, aotk_model_num_variables(model)) == NULL
             ? AOTK_OK : AOTK_ERR_NOT_FOUND, AOTK_OK, NULL);
  expect("NULL model queries", aotk_model_num_variables(NULL) == 0 &&
         aotk_model_variable_name(NULL, 0) == NULL && aotk_model_threads(NULL) == 0
             ? AOTK_OK : AOTK_ERR_NULL, AOTK_OK, NULL);
  expect("status message of an unknown code",
         strcmp(aotk_status_message((aotk_status)1000), "unknown aotk status") == 0
             ? AOTK_OK : AOTK_ERR_NOT_FOUND, AOTK_OK, NULL);
  expect("dtype size of an unknown dtype", aotk_dtype_size((aotk_dtype)42) == 0
             ? AOTK_OK : AOTK_ERR_DTYPE, AOTK_OK, NULL);
}

static void create_cases(char **paths) {
  aotk_model *model = NULL;
  aotk_options options = {1, NULL};
  expect("create with NULL out", errs_create(NULL, &options), AOTK_ERR_NULL, "model");
  options.weights_path = "/nonexistent/errs.weights";
  expect("missing weights file", errs_create(&model, &options), AOTK_ERR_WEIGHTS_IO,
         "cannot open");
  options.weights_path = paths[2];
  expect("corrupted weights", errs_create(&model, &options), AOTK_ERR_WEIGHTS_CHECKSUM, "CRC-32");
  options.weights_path = paths[3];
  expect("truncated weights", errs_create(&model, &options), AOTK_ERR_WEIGHTS_FORMAT,
         "truncated");
  options.weights_path = paths[4];
  expect("another model's weights", errs_create(&model, &options), AOTK_ERR_WEIGHTS_MISMATCH,
         "another model or layout");
  expect("no model after failures", model == NULL ? AOTK_OK : AOTK_ERR_NULL, AOTK_OK, NULL);
  options.weights_path = paths[1];
  expect("external weights", errs_create(&model, &options), AOTK_OK, NULL);
  aotk_model_destroy(model);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s external corrupt truncated other\n", argv[0]);
    return 2;
  }
  char *paths[5] = {argv[0], argv[1], argv[2], argv[3], argv[4]};
  aotk_model *model = NULL;
  aotk_options options = {2, NULL};
  expect("API version", aotk_api_version() == AOTK_API_VERSION ? AOTK_OK : AOTK_ERR_NOT_FOUND,
         AOTK_OK, NULL);
  expect("create", errs_create(&model, &options), AOTK_OK, NULL);
  if (model == NULL) return 1;
  run_cases(model);
  variable_cases(model);
  other_entry_cases(model);
  aotk_model_destroy(model);
  aotk_model_destroy(NULL);
  create_cases(paths);
  printf("%d failures\n", failures);
  return failures != 0;
}
