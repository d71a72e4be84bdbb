/* Runs one exported model ("conc": x float32 [?, 16] -> out0 float32 [?, 8]) from 4
 * threads at once, each on its own inputs, and compares with sequential runs bit for bit.
 * usage: concurrent <threads per model>; exits 0 when every result matches. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conc.h"

#define WORKERS 4
#define ROUNDS 50
#define BATCH 33

typedef struct {
  aotk_model *model;
  int id;
  float x[BATCH * 16];
  float want[BATCH * 8];
  float got[BATCH * 8];
  int mismatches;
  aotk_status status;
} job;

static void fill(job *j) {
  for (int i = 0; i < BATCH * 16; i++) j->x[i] = (float)((i * 7 + j->id * 13) % 23) / 23.0f - 0.5f;
}

static void *work(void *arg) {
  job *j = arg;
  for (int r = 0; r < ROUNDS && j->status == AOTK_OK; r++) {
    memset(j->got, 0, sizeof j->got);
    j->status = conc_run(j->model, j->x, BATCH, j->got, BATCH * 8);
    if (memcmp(j->got, j->want, sizeof j->got) != 0) j->mismatches++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  aotk_options options = {argc > 1 ? atoi(argv[1]) : 0, NULL};
  aotk_model *model = NULL;
  if (conc_create(&model, &options) != AOTK_OK) {
    fprintf(stderr, "create: %s\n", aotk_last_error());
    return 1;
  }
  static job jobs[WORKERS];
  for (int w = 0; w < WORKERS; w++) {
    jobs[w].model = model;
    jobs[w].id = w;
    fill(&jobs[w]);
    if (conc_run(model, jobs[w].x, BATCH, jobs[w].want, BATCH * 8) != AOTK_OK) {
      fprintf(stderr, "sequential run: %s\n", aotk_last_error());
      return 1;
    }
  }
  pthread_t threads[WORKERS];
  for (int w = 0; w < WORKERS; w++) pthread_create(&threads[w], NULL, work, &jobs[w]);
  int bad = 0;
  for (int w = 0; w < WORKERS; w++) {
    pthread_join(threads[w], NULL);
    bad += jobs[w].mismatches + (jobs[w].status != AOTK_OK);
    printf("worker %d: %d mismatches, status %d, first output %.6f\n", w, jobs[w].mismatches,
           (int)jobs[w].status, (double)jobs[w].got[0]);
  }
  aotk_model_destroy(model);
  printf("%s\n", bad ? "MISMATCH" : "all equal");
  return bad != 0;
}
