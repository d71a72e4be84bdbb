/* Dims whose tensors cannot be addressed get AOTK_ERR_SIZE, never a wrapped-around size.
 * Model "big": x float32 [?, ?] -> softmax(transpose(x) @ x), an [n, n] result.
 *
 * The input claims a capacity it does not have: every call here must fail its checks
 * before reading it. Prints one line per case; exits 0 when each returned its status. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "big.h"
#include "expect.h"

int main(void) {
  aotk_model *model = NULL;
  if (big_create(&model, NULL) != AOTK_OK) {
    printf("FAIL create: %s\n", aotk_last_error());
    return 1;
  }
  static float x[16], y[16];
  aotk_tensor in = {AOTK_FLOAT32, 2, {2, 3}, x, sizeof x};
  aotk_tensor out = {AOTK_FLOAT32, 0, {0}, y, sizeof y};
  size_t bytes = 0;
  expect("small dims", aotk_model_workspace_size(model, &in, 1, &bytes), AOTK_OK, NULL);
  expect("small workspace", bytes > 0 && bytes < ((size_t)1 << 20) ? AOTK_OK : AOTK_ERR_SIZE, AOTK_OK, NULL);
  expect("small run", aotk_model_run(model, &in, 1, &out, 1), AOTK_OK, NULL);

  /* 2**30 x 2**30 floats: 2**62 bytes, past any address space */
  aotk_tensor huge = {AOTK_FLOAT32, 2, {1, (int64_t)1 << 30}, x, SIZE_MAX};
  bytes = 12345;
  expect("workspace size", aotk_model_workspace_size(model, &huge, 1, &bytes), AOTK_ERR_SIZE,
         "aotk_model_workspace_size: size overflows: at x dim 0 = 1, x dim 1 = 1073741824");
  expect("bytes untouched", bytes == 12345 ? AOTK_OK : AOTK_ERR_SIZE, AOTK_OK, NULL);
  expect("output shapes", aotk_model_output_shapes(model, &huge, 1, &out, 1), AOTK_ERR_SIZE,
         "aotk_model_output_shapes: size overflows");
  expect("run", aotk_model_run(model, &huge, 1, &out, 1), AOTK_ERR_SIZE,
         "aotk_model_run: size overflows");
  static unsigned char ws[4096] __attribute__((aligned(AOTK_ALIGNMENT)));
  expect("run with workspace", aotk_model_run_with_workspace(model, &huge, 1, &out, 1, ws,
         sizeof ws), AOTK_ERR_SIZE, "size overflows");
  /* 2**31 - 1 squared wraps an int64 byte count to a small positive number */
  huge.dims[1] = ((int64_t)1 << 31) - 1;
  expect("largest dim", aotk_model_workspace_size(model, &huge, 1, &bytes), AOTK_ERR_SIZE,
         "size overflows");
  aotk_model_destroy(model);
  return failures != 0;
}
