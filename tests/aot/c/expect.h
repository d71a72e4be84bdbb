/* The check of the C test programs: one printed line per case ("ok  " or "FAIL"), with
 * the status and aotk_last_error(); `failures` counts the cases that failed. Include it
 * after the model's header. */
#ifndef AOTK_TEST_EXPECT_H
#define AOTK_TEST_EXPECT_H

#include <stdio.h>
#include <string.h>

static int failures = 0;

/* The call returned `want`, and its message contains `needle` (unless NULL). */
static void expect(const char *what, aotk_status got, aotk_status want, const char *needle) {
  const char *message = got == AOTK_OK ? "" : aotk_last_error();
  int ok = got == want && (needle == NULL || strstr(message, needle) != NULL);
  printf("%s %s: status %d (%s) %s\n", ok ? "ok  " : "FAIL", what, (int)got,
         aotk_status_message(got), message);
  failures += !ok;
}

#endif
