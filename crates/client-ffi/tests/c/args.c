/*
 * Prints what omlc_init did to argc/argv and the return codes of the
 * lifecycle calls, one "name=value" per line, for tests/c_api.rs.
 * The application name comes from $ARGS_APP (default "args").
 */
#include <stdio.h>
#include <stdlib.h>

#include <oml2/omlc.h>

static OmlMPDef defs[] = {
  {"n", OML_INT32_VALUE},
  {NULL, (OmlValueT)0},
};

int main(int argc, char **argv)
{
  const char *app = getenv("ARGS_APP") ? getenv("ARGS_APP") : "args";
  OmlValueU v[1];
  OmlMP *mp;
  int i, rc;

  rc = omlc_init(app, &argc, (const char **)argv, NULL);
  printf("init=%d\nargc=%d\nargv=", rc, argc);
  for (i = 0; i < argc; i++)
    printf("%s%s", i ? " " : "", argv[i]);
  printf("\nterminated=%s\n", argv[argc] == NULL ? "yes" : "no");
  if (rc == -1)
    return 0;

  omlc_zero_array(v, 1);
  omlc_set_int32(v[0], 7);
  printf("bad_mp=%s\n", omlc_add_mp("bad-name", defs) == NULL ? "null" : "set");
  mp = omlc_add_mp("m", defs);
  printf("mp=%s\n", mp == NULL ? "null" : mp->name);
  printf("dup_mp=%s\n", omlc_add_mp("m", defs) == NULL ? "null" : "set");
  printf("before_start=%d\n", omlc_inject(mp, v));
  printf("null_mp=%d\n", omlc_inject(NULL, v));
  printf("null_values=%d\n", omlc_inject(mp, NULL));
  printf("start=%d\n", omlc_start());
  printf("active=%d\n", mp ? mp->active : -1);
  printf("inject=%d\n", omlc_inject(mp, v));
  printf("meta_int=%d\n", omlc_inject_metadata(mp, "k", &v[0], OML_INT32_VALUE, NULL));
  printf("start_again=%d\n", omlc_start());
  printf("close=%d\n", omlc_close());
  printf("after_close=%d\n", omlc_inject(mp, v));
  printf("close_again=%d\n", omlc_close());
  return 0;
}
