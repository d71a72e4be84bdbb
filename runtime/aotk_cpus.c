/* aotk runtime: the default size of a pool (see aotk_cpus_internal.h); C99 + pthreads.
 *
 * A CPU quota caps the time a cgroup's threads may run each period, not the CPUs they may
 * run on. A pool with a thread per CPU of the affinity mask then has threads stopped for
 * the rest of each period while the others wait for their chunks, so the quota caps the
 * pool too. Linux shows it in files: /proc/self/mountinfo says where the cgroup file
 * systems are mounted (the cgroup2 one, and the v1 hierarchy holding the cpu controller)
 * and which group each mount shows at its top; /proc/self/cgroup says which group of each
 * this process is in. Every group from the process's up to the mount's top may set a
 * limit: cgroup2's cpu.max holds "quota period" or "max period", v1's cpu.cfs_quota_us a
 * quota (-1: none) over cpu.cfs_period_us.
 */
#if defined(__linux__)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#else
#define _POSIX_C_SOURCE 200809L
#endif

#include "aotk_cpus_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PATH_SIZE 4096
#define MOUNT_FIELDS 64

/* One cgroup hierarchy, as this process sees it. */
struct hierarchy {
  char mount[PATH_SIZE]; /* where it is mounted */
  char top[PATH_SIZE];   /* the group shown at the mount point */
  char group[PATH_SIZE]; /* the group of this process */
  int mounted, member;
};

static int set_path(char *dst, const char *src) {
  int len = snprintf(dst, PATH_SIZE, "%s", src);
  return len >= 0 && len < PATH_SIZE;
}

static FILE *open_under(const char *root, const char *dir, const char *name) {
  char path[PATH_SIZE];
  int len = snprintf(path, sizeof path, "%s%s%s", root, dir, name);
  return len < 0 || len >= (int)sizeof path ? NULL : fopen(path, "r");
}

/* The next line of f in buf, without its newline; 0 at the end of the file. A line too
 * long for buf is read whole and comes back empty. */
static int next_line(FILE *f, char *buf, int size) {
  if (fgets(buf, size, f) == NULL) return 0;
  size_t len = strlen(buf);
  if (len > 0 && buf[len - 1] == '\n') {
    buf[len - 1] = '\0';
  } else if (!feof(f)) {
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n') continue;
    buf[0] = '\0';
  }
  return 1;
}

/* Split s in place at `sep` into at most `most` fields, the last taking the rest. */
static int split(char *s, char sep, char **fields, int most) {
  int n = 0;
  for (;;) {
    fields[n++] = s;
    if (n == most || (s = strchr(s, sep)) == NULL) return n;
    *s++ = '\0';
  }
}

/* Whether the comma-separated `list` holds `item`. */
static int has_item(const char *list, const char *item) {
  size_t len = strlen(item);
  for (const char *at = list; at != NULL; at = strchr(at, ',')) {
    if (*at == ',') at++;
    if (strncmp(at, item, len) == 0 && (at[len] == ',' || at[len] == '\0')) return 1;
  }
  return 0;
}

/* Undo mountinfo's octal escapes ("\040" for a space) in place. */
static void unescape(char *s) {
  char *out = s;
  for (; *s != '\0'; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
        s[3] >= '0' && s[3] <= '7') {
      *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *out++ = *s;
    }
  }
  *out = '\0';
}

/* Where cgroup2 (v2) and the v1 hierarchy with the cpu controller (v1) are mounted. A
 * mountinfo line: id parent dev top mount options [optional fields] - type source super. */
static void read_mounts(const char *root, struct hierarchy *v1, struct hierarchy *v2) {
  FILE *f = open_under(root, "/proc/self/mountinfo", "");
  if (f == NULL) return;
  char line[PATH_SIZE];
  while (next_line(f, line, sizeof line)) {
    char *field[MOUNT_FIELDS];
    int n = split(line, ' ', field, MOUNT_FIELDS), dash = 6;
    while (dash < n && strcmp(field[dash], "-") != 0) dash++;
    if (dash + 3 >= n) continue;
    struct hierarchy *h = NULL;
    if (strcmp(field[dash + 1], "cgroup2") == 0) h = v2;
    if (strcmp(field[dash + 1], "cgroup") == 0 && has_item(field[dash + 3], "cpu")) h = v1;
    if (h == NULL || h->mounted) continue;
    unescape(field[3]);
    unescape(field[4]);
    h->mounted = set_path(h->top, field[3]) && set_path(h->mount, field[4]);
  }
  fclose(f);
}

/* The groups of this process: a line "id:controllers:group", "0::group" for cgroup2. */
static void read_groups(const char *root, struct hierarchy *v1, struct hierarchy *v2) {
  FILE *f = open_under(root, "/proc/self/cgroup", "");
  if (f == NULL) return;
  char line[PATH_SIZE];
  while (next_line(f, line, sizeof line)) {
    char *field[3];
    if (split(line, ':', field, 3) != 3) continue;
    struct hierarchy *h = NULL;
    if (strcmp(field[0], "0") == 0 && field[1][0] == '\0') h = v2;
    if (has_item(field[1], "cpu")) h = v1;
    if (h != NULL && !h->member) h->member = set_path(h->group, field[2]);
  }
  fclose(f);
}

/* The first one or two integers of file `dir/name` ("max" reads as -1): how many. */
static int read_numbers(const char *dir, const char *name, long long *a, long long *b) {
  FILE *f = open_under("", dir, name);
  if (f == NULL) return 0;
  char text[128], *end;
  int n = 0;
  if (next_line(f, text, sizeof text)) {
    const char *at = text;
    *a = strncmp(at, "max", 3) == 0 ? -1 : strtoll(at, &end, 10);
    at = strncmp(at, "max", 3) == 0 ? at + 3 : end;
    n = at == text ? 0 : 1;
    if (n == 1 && *at == ' ') {
      *b = strtoll(at, &end, 10);
      n = end == at ? 1 : 2;
    }
  }
  fclose(f);
  return n;
}

/* Whole CPUs the group at `dir` may use, rounded up; 0 for no limit. */
static long long group_limit(const char *dir, int v2) {
  long long quota = 0, period = 0, unused;
  if (v2 && read_numbers(dir, "/cpu.max", &quota, &period) != 2) return 0;
  if (!v2 && (read_numbers(dir, "/cpu.cfs_quota_us", &quota, &unused) < 1 ||
              read_numbers(dir, "/cpu.cfs_period_us", &period, &unused) < 1)) {
    return 0;
  }
  if (quota <= 0 || period <= 0) return 0;
  return quota / period + (quota % period != 0);
}

/* The tightest limit from the process's group up to the mount's top; 0 for none. A group
 * outside the one mounted (another cgroup namespace's view) reads the mount's top only. */
static long long hierarchy_limit(const char *root, const struct hierarchy *h, int v2) {
  if (!h->mounted || !h->member) return 0;
  const char *below = h->group;
  size_t top = strlen(h->top);
  if (strcmp(h->top, "/") != 0) {
    int inside = strncmp(h->group, h->top, top) == 0 &&
                 (h->group[top] == '/' || h->group[top] == '\0');
    below = inside ? h->group + top : "";
  }
  char dir[PATH_SIZE];
  int len = snprintf(dir, sizeof dir, "%s%s%s", root, h->mount, below);
  if (len < 0 || len >= (int)sizeof dir) return 0;
  int mount_end = (int)(strlen(root) + strlen(h->mount));
  while (len > mount_end && dir[len - 1] == '/') dir[--len] = '\0';
  long long tightest = 0;
  for (;;) {
    long long limit = group_limit(dir, v2);
    if (limit > 0 && (tightest == 0 || limit < tightest)) tightest = limit;
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash - dir < mount_end) return tightest;
    *slash = '\0';
  }
}

int aotk_cpu_quota(const char *root) {
  struct hierarchy *h = calloc(2, sizeof *h); /* 24 KiB: off the caller's stack */
  if (h == NULL) return 0;
  read_mounts(root, &h[0], &h[1]);
  read_groups(root, &h[0], &h[1]);
  long long v1 = hierarchy_limit(root, &h[0], 0), v2 = hierarchy_limit(root, &h[1], 1);
  free(h);
  long long n = v1 == 0 || (v2 != 0 && v2 < v1) ? v2 : v1;
  return n > AOTK_MAX_THREADS ? AOTK_MAX_THREADS : (int)n;
}

static pthread_once_t g_quota_once = PTHREAD_ONCE_INIT;
static int g_quota = 0;

static void read_quota(void) { g_quota = aotk_cpu_quota(""); }

/* (Declared in the header.) The quota is read once: kernels ask for the default size on
 * every call until the default pool exists. */
int aotk_available_cpus(void) {
  long n = 0;
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
#endif
  if (n < 1) n = sysconf(_SC_NPROCESSORS_ONLN);
  pthread_once(&g_quota_once, read_quota);
  if (g_quota > 0 && g_quota < n) n = g_quota;
  return n < 1 ? 1 : (n > AOTK_MAX_THREADS ? AOTK_MAX_THREADS : (int)n);
}

/* The positive thread count variable `name` holds (for OMP_NUM_THREADS, the first of a
 * per-level list "4,2": `list` is ','), capped at AOTK_MAX_THREADS; 0 if it is unset or
 * holds anything else (the Python side warns about those). */
static int env_threads(const char *name, char list) {
  const char *env = getenv(name);
  if (env == NULL || *env == '\0') return 0;
  char *end = NULL;
  long n = strtol(env, &end, 10);
  if (end == env || (*end != '\0' && (list == 0 || *end != list)) || n <= 0) return 0;
  return n > AOTK_MAX_THREADS ? AOTK_MAX_THREADS : (int)n;
}

int aotk_resolve_threads(int n) {
  if (n <= 0) n = env_threads("AOTK_NUM_THREADS", 0);
  if (n <= 0) n = env_threads("OMP_NUM_THREADS", ',');
  if (n <= 0) return aotk_available_cpus();
  return n > AOTK_MAX_THREADS ? AOTK_MAX_THREADS : n;
}
