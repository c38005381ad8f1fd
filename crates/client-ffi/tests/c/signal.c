/*
 * Injects 100 samples into a 1000-sample window, says "ready", then waits
 * to be killed: the library's SIGTERM handler must close (flushing the
 * partial window) before the process dies of the signal.
 */
#include <stdio.h>
#include <unistd.h>

#include <oml2/omlc.h>

static OmlMPDef defs[] = {
  {"n", OML_INT32_VALUE},
  {NULL, (OmlValueT)0},
};

int main(int argc, char **argv)
{
  OmlValueU v[1];
  OmlMP *mp;
  int i;

  if (omlc_init("sig", &argc, (const char **)argv, NULL) != 0)
    return 1;
  mp = omlc_add_mp("m", defs);
  if (mp == NULL || omlc_start() != 0)
    return 1;
  omlc_zero_array(v, 1);
  for (i = 1; i <= 100; i++) {
    omlc_set_int32(v[0], i);
    omlc_inject(mp, v);
  }
  printf("ready\n");
  fflush(stdout);
  for (;;)
    pause();
}
