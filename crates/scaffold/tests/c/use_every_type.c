/*
 * A program written against oml2-scaffold's headers for
 * tests/fixtures/every_type.rb: it uses every generated helper, the
 * handles, the popt table and the option variables. The tests compile it
 * unchanged against the reference generator's headers and against ours
 * (-Wall -Werror), run it against a streamgauge server and check the rows.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <popt.h>

#define USE_OPTS
#include "every_type_popt.h"

#define OML_FROM_MAIN
#include "every_type_oml.h"

int
main(int argc, const char *argv[])
{
  int c;
  static const unsigned char blob[] = {0, 1, 2, 0xff};
  static const double vd[] = {1.5, -2.25, 1e10};
  static const int32_t vi32[] = {INT32_MIN, INT32_MAX};
  static const uint32_t vu32[] = {0, UINT32_MAX};
  static const int64_t vi64[] = {INT64_MIN, INT64_MAX};
  static const uint64_t vu64[] = {0, UINT64_MAX};
  static const bool vb[] = {true, false, true};

  if (omlc_init("every_type", &argc, argv, NULL) < 0) {
    fprintf(stderr, "omlc_init failed\n");
    return 1;
  }
  poptContext ctx = poptGetContext(NULL, argc, argv, options, 0);
  while ((c = poptGetNextOpt(ctx)) > 0) {
  }
  if (c < -1) {
    fprintf(stderr, "bad option %s\n", poptBadOption(ctx, 0));
    return 2;
  }
  oml_register_mps();
  if (omlc_start() != 0) {
    fprintf(stderr, "omlc_start failed\n");
    return 3;
  }

  /* Option variables, with the types the generated opts_t gives them. */
  int repeat = g_opts->repeat;
  double delay = g_opts->delay;
  char *label = g_opts->label;
  int count = g_opts->count;
  unsigned int big_count = g_opts->big_count;
  int legacy = g_opts->legacy;

  if (oml_inject_scalars(g_oml_mps->scalars, INT32_MIN, UINT32_MAX, INT64_MIN, UINT64_MAX,
                         100.125, "tab\there", blob, sizeof blob,
                         (oml_guid_t)0x0123456789ABCDEFull, 1) != 0) {
    return 4;
  }
  /* The second row carries the parsed options. */
  if (oml_inject_scalars(g_oml_mps_every_type->scalars, count, big_count, g_opts->i64,
                         (uint64_t)g_opts->u64, delay, label, "", 0, (oml_guid_t)legacy,
                         (uint8_t)repeat) != 0) {
    return 5;
  }
  if (oml_inject_vectors(g_oml_mps->vectors, vd, 3, vi32, 2, vu32, 2, vi64, 2, vu64, 2, vb, 3) != 0) {
    return 6;
  }
  if (oml_inject_vectors(g_oml_mps->vectors, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0, NULL, 0) != 0) {
    return 7;
  }
  if (oml_inject_aliases(g_oml_mps->aliases, -7, 8, 0.25, 0.5, 1) != 0) {
    return 8;
  }
  omlc_close();
  poptFreeContext(ctx);
  return 0;
}
