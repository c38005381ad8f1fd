/*
 * Injects into a 1000-sample window and returns from main without
 * omlc_close: the library's exit handler must flush the partial window.
 */
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

  if (omlc_init("noclose", &argc, (const char **)argv, NULL) != 0)
    return 1;
  mp = omlc_add_mp("m", defs);
  if (mp == NULL || omlc_start() != 0)
    return 1;
  omlc_zero_array(v, 1);
  for (i = 1; i <= 10; i++) {
    omlc_set_int32(v[0], i);
    omlc_inject(mp, v);
  }
  return 0;
}
