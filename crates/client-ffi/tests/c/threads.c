/*
 * Four threads inject into one measurement point at once (liboml2 did not
 * lock MPs without an interval stream, spec §11 defect 26).
 */
#include <pthread.h>
#include <stdio.h>

#include <oml2/omlc.h>

#define THREADS 4
#define SAMPLES 20000

static OmlMPDef defs[] = {
  {"thread", OML_INT32_VALUE},
  {"i", OML_UINT32_VALUE},
  {"label", OML_STRING_VALUE},
  {NULL, (OmlValueT)0},
};

static OmlMP *mp;
static int failures;

static void *worker(void *arg)
{
  int id = (int)(size_t)arg;
  char label[32];
  OmlValueU v[3];
  unsigned i;

  omlc_zero_array(v, 3);
  for (i = 0; i < SAMPLES; i++) {
    snprintf(label, sizeof label, "t%d-%u", id, i);
    omlc_set_int32(v[0], id);
    omlc_set_uint32(v[1], i);
    omlc_set_string(v[2], label);
    if (omlc_inject(mp, v) != 0)
      __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

int main(int argc, char **argv)
{
  pthread_t t[THREADS];
  size_t i;

  if (omlc_init("threads", &argc, (const char **)argv, NULL) != 0)
    return 1;
  mp = omlc_add_mp("work", defs);
  if (mp == NULL || omlc_start() != 0)
    return 1;
  for (i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, worker, (void *)i);
  for (i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  omlc_close();
  printf("failures=%d\n", failures);
  return failures != 0;
}
