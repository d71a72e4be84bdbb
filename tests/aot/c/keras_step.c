/* A Keras model's training step trained from C through its typed entry point, whose
 * targets take no class-dim argument (the library takes only the output's shape).
 * Model "kstep": Dense(8, relu) then Dense(3, softmax) on 4 features, categorical
 * crossentropy, SGD; inputs x [?, 4], targets [?, 3], sample weights [?].
 *
 * Data: x[i][j] = ((7 i + 3 j) mod 5) - 2, the target of row i is class i mod 3, every
 * weight 1. Prints "loss <value>" per step, then one line per error case. */
#include <stdio.h>

#include "kstep.h"
#include "expect.h"

enum { BATCH = 8, STEPS = 4 };

int main(void) {
  aotk_model *model = NULL;
  if (kstep_create(&model, NULL) != AOTK_OK) {
    printf("FAIL create: %s\n", aotk_last_error());
    return 1;
  }
  float x[BATCH * 4], targets[BATCH * 3] = {0}, weights[BATCH], loss = 0;
  for (int i = 0; i < BATCH; i++) {
    for (int j = 0; j < 4; j++) x[i * 4 + j] = (float)((7 * i + 3 * j) % 5) - 2.0f;
    targets[i * 3 + i % 3] = 1.0f;
    weights[i] = 1.0f;
  }
  for (int step = 0; step < STEPS; step++) {
    aotk_status status = kstep_run(model, x, BATCH, targets, BATCH, weights, BATCH, &loss, 1);
    expect("step", status, AOTK_OK, NULL);
    printf("loss %.9g\n", (double)loss);
  }
  expect("targets of another batch",
         kstep_run(model, x, BATCH, targets, BATCH - 1, weights, BATCH, &loss, 1),
         AOTK_ERR_SHAPE, "must equal input 'hidden_input' dim 0");
  aotk_model_destroy(model);
  return failures != 0;
}
