/* aotk_print.c: how an exported model prints a tensor (aotk.print_tensor / K.print_tensor).
 *
 * A kernel reports the tensor piece by piece: aotk_print_begin(message, dtype, rank), one
 * aotk_print_dim per axis, one aotk_print_f64 or aotk_print_i64 per element in row-major
 * order, then aotk_print_end. This file writes one line to stdout in TensorFlow's
 * tf.Print layout, "message[[1 0.5][-2 1e-07]]" (floats as %g, integers and bools as
 * integers, "[]" for no elements), and flushes it. In-process (the JIT), aotk binds the
 * same four calls to Python, which prints `message` and the NumPy array to sys.stdout.
 * State is per thread, so concurrent runs each print whole lines of their own.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define AOTK_PRINT_MAX_RANK 16

typedef struct {
  int64_t rank, ndims, count;
  int64_t blocks[AOTK_PRINT_MAX_RANK]; /* blocks[a]: elements in one block of axes a.. */
} print_state;

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static void make_state_key(void) {
  if (pthread_key_create(&state_key, free) != 0) state_key = 0;
}

static print_state *state(void) {
  print_state *s;
  pthread_once(&state_once, make_state_key);
  s = pthread_getspecific(state_key);
  if (s == NULL) {
    s = calloc(1, sizeof *s);
    if (s != NULL && pthread_setspecific(state_key, s) != 0) {
      free(s);
      s = NULL;
    }
  }
  return s;
}

int32_t aotk_print_begin(const char *message, const char *dtype, int64_t rank) {
  print_state *s = state();
  (void)dtype;
  fputs(message, stdout);
  if (s == NULL) return 1;
  s->rank = rank < AOTK_PRINT_MAX_RANK ? rank : AOTK_PRINT_MAX_RANK;
  s->ndims = 0;
  s->count = 0;
  return 0;
}

int32_t aotk_print_dim(int64_t dim) {
  print_state *s = state();
  int64_t a;
  if (s == NULL || s->ndims >= s->rank) return 1;
  s->blocks[s->ndims++] = 1;
  for (a = 0; a < s->ndims; a++) s->blocks[a] *= dim; /* blocks[a] = prod(dims[a:]) */
  return 0;
}

/* The brackets before element `index` ('[' per block it starts) or after it. */
static void brackets(const print_state *s, int64_t index, char bracket) {
  int64_t a;
  for (a = 0; a < s->rank; a++)
    if (s->blocks[a] > 0 && index % s->blocks[a] == 0) fputc(bracket, stdout);
}

static void element_done(print_state *s) {
  int64_t a, closes = 0;
  s->count++;
  for (a = 0; a < s->rank; a++) closes += s->blocks[a] > 0 && s->count % s->blocks[a] == 0;
  if (closes == 0 && s->rank > 0) fputc(' ', stdout);
  for (a = 0; a < closes; a++) fputc(']', stdout);
}

int32_t aotk_print_f64(double value) {
  print_state *s = state();
  if (s == NULL) return 1;
  brackets(s, s->count, '[');
  printf("%g", value);
  element_done(s);
  return 0;
}

int32_t aotk_print_i64(int64_t value) {
  print_state *s = state();
  if (s == NULL) return 1;
  brackets(s, s->count, '[');
  printf("%lld", (long long)value);
  element_done(s);
  return 0;
}

int32_t aotk_print_end(void) {
  print_state *s = state();
  if (s != NULL && s->rank > 0 && s->count == 0) fputs("[]", stdout);
  fputc('\n', stdout);
  fflush(stdout);
  return 0;
}
