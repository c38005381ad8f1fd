/*
 * A stock liboml2 client for the storage-failure tests: injects rows of
 * measurement point "flood" (i:int32, s:string of 200 'x' then " <i>"),
 * first 5000 (more than its buffer: it then surely connects and sends),
 * then, after a line on stdin, the rest up to argv[1], and
 * closes.
 *
 * Usage: flood N [--oml-* options]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oml2/omlc.h>

static OmlMPDef flood_def[] = {
  {"i", OML_INT32_VALUE},
  {"s", OML_STRING_VALUE},
  {NULL, (OmlValueT)0},
};

int main(int argc, char **argv)
{
  char pad[256];
  char line[16];
  OmlValueU v[2];
  OmlMP *mp;
  int i, n;

  if (omlc_init("flood", &argc, (const char **)argv, NULL) != 0 || argc < 2) {
    fprintf(stderr, "flood: usage: flood N [--oml-* options]\n");
    return 2;
  }
  n = atoi(argv[1]);
  mp = omlc_add_mp("flood", flood_def);
  if (mp == NULL || omlc_start() != 0) {
    fprintf(stderr, "flood: cannot start\n");
    return 1;
  }
  omlc_zero_array(v, 2);
  for (i = 0; i < n; i++) {
    if (i == 5000 && fgets(line, sizeof line, stdin) == NULL) {
      break;
    }
    memset(pad, 'x', 200);
    snprintf(pad + 200, sizeof pad - 200, " %d", i);
    omlc_set_int32(v[0], i);
    omlc_set_string(v[1], pad);
    omlc_inject(mp, v);
  }
  omlc_close();
  return 0;
}
