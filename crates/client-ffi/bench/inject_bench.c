/*
 * inject_bench: what one omlc_inject costs the calling thread.
 *
 * Written against <oml2/omlc.h> only, so that the same source links with
 * streamgauge's liboml2 and with the reference liboml2 (the driver,
 * `streamgauge bench c-inject`, builds and runs both in the same run).
 *
 * The sample is (int32, double, 16-character string). Every thread first
 * injects one untimed warm-up burst (the first inject of a thread creates
 * its queue), then:
 *
 *   --mode burst      BURSTS bursts of BURST_SIZE injects, PAUSE_US
 *                     microseconds apart (the writer drains the queue in
 *                     the pause, so the queue always has room). Each burst
 *                     is timed as a whole (two clock reads per burst, not
 *                     per inject) and gives one figure: its time / size.
 *   --mode sustained  injects back to back for MILLIS ms: the end-to-end
 *                     rate (encoding and I/O included once the queue fills).
 *
 * Output, one line on stdout (key=value, nanoseconds per inject):
 *   result mode=burst threads=1 calls=N failures=0 median=.. p10=.. p90=.. min=.. max=..
 * where the statistics are over all bursts of all threads (sustained: over
 * threads). Options: --threads N --mode M --bursts K --burst-size B
 * --pause-us P --millis MS, plus the library's own --oml-* options.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <oml2/omlc.h>

#define MAX_THREADS 64

static OmlMPDef defs[] = {
  {"i", OML_INT32_VALUE},
  {"x", OML_DOUBLE_VALUE},
  {"label", OML_STRING_VALUE},
  {NULL, (OmlValueT)0},
};

static OmlMP *mp;
static int sustained;
static long bursts = 200, burst_size = 1000, pause_us = 5000;
static double seconds = 1.0;

struct worker {
  pthread_t thread;
  double *figures; /* ns per inject: one per burst (or one, sustained) */
  long nfigures;
  long calls;
  long failures;
};

static double now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void pause_between(void)
{
  struct timespec ts;
  ts.tv_sec = pause_us / 1000000;
  ts.tv_nsec = (pause_us % 1000000) * 1000;
  nanosleep(&ts, NULL);
}

/* Injects `n` samples; returns the failures. */
static long burst(OmlValueU *v, long n, long base)
{
  long i, failed = 0;
  for (i = 0; i < n; i++) {
    omlc_set_int32(v[0], (int32_t)(base + i));
    omlc_set_double(v[1], (double)(base + i) * 0.5);
    if (omlc_inject(mp, v) != 0)
      failed++;
  }
  return failed;
}

static void *run(void *arg)
{
  struct worker *w = arg;
  OmlValueU v[3];
  long b, n = 0;

  omlc_zero_array(v, 3);
  omlc_set_string(v[2], "sixteen-chars-ab");
  w->failures += burst(v, burst_size, 0);
  pause_between();
  if (sustained) {
    double t0 = now_ns(), t1 = t0;
    while (t1 - t0 < seconds * 1e9) {
      w->failures += burst(v, 1024, n);
      n += 1024;
      t1 = now_ns();
    }
    w->figures[0] = (t1 - t0) / (double)n;
    w->nfigures = 1;
  } else {
    for (b = 0; b < bursts; b++) {
      double t0 = now_ns();
      w->failures += burst(v, burst_size, n);
      w->figures[b] = (now_ns() - t0) / (double)burst_size;
      n += burst_size;
      pause_between();
    }
    w->nfigures = bursts;
  }
  w->calls = n;
  return NULL;
}

static int cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double at(const double *sorted, long n, double q)
{
  long i = (long)(q * (double)(n - 1) + 0.5);
  return sorted[i];
}

static long arg_long(const char *s, const char *name, long lo, long hi)
{
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "inject_bench: %s must be %ld to %ld\n", name, lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv)
{
  static struct worker workers[MAX_THREADS];
  long threads = 1, i, n = 0, calls = 0, failures = 0;
  double *all;
  int a;

  if (omlc_init("cbench", &argc, (const char **)argv, NULL) != 0)
    return 1;
  for (a = 1; a + 1 < argc; a += 2) {
    const char *k = argv[a], *v = argv[a + 1];
    if (strcmp(k, "--threads") == 0)
      threads = arg_long(v, k, 1, MAX_THREADS);
    else if (strcmp(k, "--mode") == 0)
      sustained = strcmp(v, "sustained") == 0;
    else if (strcmp(k, "--bursts") == 0)
      bursts = arg_long(v, k, 1, 1000000);
    else if (strcmp(k, "--burst-size") == 0)
      burst_size = arg_long(v, k, 1, 10000000);
    else if (strcmp(k, "--pause-us") == 0)
      pause_us = arg_long(v, k, 0, 10000000);
    else if (strcmp(k, "--millis") == 0)
      seconds = (double)arg_long(v, k, 1, 3600000) / 1000.0;
    else {
      fprintf(stderr, "inject_bench: unknown option %s\n", k);
      return 2;
    }
  }
  if (a != argc) {
    fprintf(stderr, "inject_bench: options take one value each\n");
    return 2;
  }
  mp = omlc_add_mp("inject", defs);
  if (mp == NULL || omlc_start() != 0)
    return 1;
  for (i = 0; i < threads; i++) {
    workers[i].figures = calloc((size_t)bursts, sizeof(double));
    if (workers[i].figures == NULL || pthread_create(&workers[i].thread, NULL, run, &workers[i]) != 0)
      return 1;
  }
  all = calloc((size_t)(threads * bursts), sizeof(double));
  if (all == NULL)
    return 1;
  for (i = 0; i < threads; i++) {
    pthread_join(workers[i].thread, NULL);
    memcpy(all + n, workers[i].figures, (size_t)workers[i].nfigures * sizeof(double));
    n += workers[i].nfigures;
    calls += workers[i].calls;
    failures += workers[i].failures;
  }
  omlc_close();
  qsort(all, (size_t)n, sizeof(double), cmp);
  printf("result mode=%s threads=%ld calls=%ld failures=%ld median=%.1f p10=%.1f p90=%.1f min=%.1f max=%.1f\n",
         sustained ? "sustained" : "burst", threads, calls, failures, at(all, n, 0.5),
         at(all, n, 0.1), at(all, n, 0.9), all[0], all[n - 1]);
  return failures != 0;
}
