/* aotk runtime: how many threads a pool gets when nobody says (C99 + pthreads).
 *
 * A pool asked for n <= 0 threads takes AOTK_NUM_THREADS, else the first entry of
 * OMP_NUM_THREADS, else one thread per CPU the process may run on: its affinity mask (on
 * Linux; taskset, a container's cpuset), capped by the CPU quota of its cgroups (docker
 * --cpus, a systemd CPUQuota, a Kubernetes CPU limit), rounded up to whole CPUs and read
 * once per process.
 */
#ifndef AOTK_CPUS_INTERNAL_H
#define AOTK_CPUS_INTERNAL_H

#ifdef __cplusplus
extern "C" {
#endif

#define AOTK_MAX_THREADS 256

/* The size of a pool asked for n threads: n if positive, else as above; capped at
 * AOTK_MAX_THREADS. */
int aotk_resolve_threads(int n);

/* The CPUs this process may run on: its affinity mask where the OS tells it, else the
 * online ones; at most its cgroups' quota (below), read once per process. The pool's
 * default without the variables, and how many threads aotk compiles on. */
int aotk_available_cpus(void);

/* Whole CPUs' worth of time the cgroups of this process may use per period, rounded up:
 * the tightest quota of its group and the groups above it, cgroup v1 or v2; 0 if none is
 * set or none can be read. Every file is read under `root` ("" for this system's own). */
int aotk_cpu_quota(const char *root);

#ifdef __cplusplus
}
#endif

#endif /* AOTK_CPUS_INTERNAL_H */
