/*
 * A measurement generator written the way liboml2's documentation shows:
 * omlc_init, a static OmlMPDef table, omlc_add_mp, omlc_start, a loop of
 * omlc_set_* and omlc_inject, omlc_close. It injects three samples of every
 * type (the Rust tests know the same table), a late measurement point
 * declared after omlc_start, and metadata.
 *
 * Usage: generator [--oml-* options]
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include <oml2/omlc.h>

static OmlMPDef all_def[] = {
  {"i32", OML_INT32_VALUE},
  {"u32", OML_UINT32_VALUE},
  {"i64", OML_INT64_VALUE},
  {"u64", OML_UINT64_VALUE},
  {"dbl", OML_DOUBLE_VALUE},
  {"str", OML_STRING_VALUE},
  {"blb", OML_BLOB_VALUE},
  {"gid", OML_GUID_VALUE},
  {"bol", OML_BOOL_VALUE},
  {"lng", OML_LONG_VALUE},
  {"vd", OML_VECTOR_DOUBLE_VALUE},
  {"vi32", OML_VECTOR_INT32_VALUE},
  {"vu32", OML_VECTOR_UINT32_VALUE},
  {"vi64", OML_VECTOR_INT64_VALUE},
  {"vu64", OML_VECTOR_UINT64_VALUE},
  {"vb", OML_VECTOR_BOOL_VALUE},
  {NULL, (OmlValueT)0},
};

static OmlMPDef late_def[] = {
  {"x", OML_UINT64_VALUE},
  {"ok", OML_BOOL_VALUE},
  {NULL, (OmlValueT)0},
};

#define CHECK(cond, what)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      fprintf(stderr, "generator: %s failed\n", (what));   \
      return 1;                                            \
    }                                                      \
  } while (0)

int main(int argc, char **argv)
{
  const char *strings[3] = {"tab\there back\\slash nl\nend", "", "plain"};
  const char *blobs[3] = {"\x00\x01\x02\xff", "", "OML"};
  const size_t blob_lens[3] = {4, 0, 3};
  const double dbls[3] = {100.125, -0.5, 0.25};
  double vd[3] = {1.5, -2.25, 1e10};
  int32_t vi32[2] = {INT32_MIN, INT32_MAX};
  uint32_t vu32[2] = {0, UINT32_MAX};
  int64_t vi64[2] = {INT64_MIN, INT64_MAX};
  uint64_t vu64[2] = {0, UINT64_MAX};
  bool vb[3] = {true, false, true};
  OmlValueU v[16];
  OmlValueU meta;
  OmlMP *mp, *late;
  int i, rc;

  rc = omlc_init("generator", &argc, (const char **)argv, NULL);
  CHECK(rc == 0, "omlc_init");
  mp = omlc_add_mp("all", all_def);
  CHECK(mp != NULL, "omlc_add_mp");
  CHECK(mp->param_count == 16, "mp->param_count");

  CHECK(omlc_start() == 0, "omlc_start");

  /* After omlc_start: the stock liboml2 refuses metadata before it (ours
   * accepts it; the program runs on both). */
  omlc_zero(meta);
  omlc_set_string(meta, "generator");
  CHECK(omlc_inject_metadata(NULL, "appname", &meta, OML_STRING_VALUE, NULL) == 0,
        "omlc_inject_metadata(appname)");

  omlc_set_string(meta, "metre");
  CHECK(omlc_inject_metadata(mp, "unit", &meta, OML_STRING_VALUE, "dbl") == 0,
        "omlc_inject_metadata(unit)");

  omlc_zero_array(v, 16);
  for (i = 0; i < 3; i++) {
    switch (i) {
    case 0:
      omlc_set_int32(v[0], INT32_MIN);
      omlc_set_uint32(v[1], UINT32_MAX);
      omlc_set_int64(v[2], INT64_MIN);
      omlc_set_uint64(v[3], UINT64_MAX);
      omlc_set_guid(v[7], 0x0123456789ABCDEFULL);
      omlc_set_bool(v[8], 1);
      omlc_set_long(v[9], 1L << 40);
      break;
    case 1:
      omlc_set_int32(v[0], INT32_MAX);
      omlc_set_uint32(v[1], 0);
      omlc_set_int64(v[2], INT64_MAX);
      omlc_set_uint64(v[3], 9223372036854775808ULL);
      omlc_set_guid(v[7], 1);
      omlc_set_bool(v[8], 0);
      omlc_set_long(v[9], -5);
      break;
    default:
      omlc_set_int32(v[0], 42);
      omlc_set_uint32(v[1], 2147483648U);
      omlc_set_int64(v[2], -1);
      omlc_set_uint64(v[3], 9223372036854775809ULL);
      omlc_set_guid(v[7], UINT64_MAX);
      omlc_set_bool(v[8], 42);
      omlc_set_long(v[9], -(1L << 40));
      break;
    }
    omlc_set_double(v[4], dbls[i]);
    if (i == 2)
      omlc_set_string_copy(v[5], strings[i], 5);
    else
      omlc_set_string(v[5], strings[i]);
    omlc_set_blob(v[6], blobs[i], blob_lens[i]);
    /* Sample 1 carries empty vectors. */
    omlc_set_vector_double(v[10], vd, i == 1 ? 0 : 3);
    omlc_set_vector_int32(v[11], vi32, i == 1 ? 0 : 2);
    omlc_set_vector_uint32(v[12], vu32, i == 1 ? 0 : 2);
    omlc_set_vector_int64(v[13], vi64, i == 1 ? 0 : 2);
    omlc_set_vector_uint64(v[14], vu64, i == 1 ? 0 : 2);
    omlc_set_vector_bool(v[15], vb, i == 1 ? 0 : 3);
    CHECK(omlc_inject(mp, v) == 0, "omlc_inject");
  }
  omlc_reset_string(v[5]);
  omlc_reset_blob(v[6]);
  for (i = 10; i < 16; i++)
    omlc_reset_vector(v[i]);

  late = omlc_add_mp("late", late_def);
  CHECK(late != NULL, "omlc_add_mp(late)");
  omlc_set_uint64(v[0], 18446744073709551614ULL);
  omlc_set_bool(v[1], 1);
  CHECK(omlc_inject(late, v) == 0, "omlc_inject(late)");

  CHECK(omlc_close() == 0, "omlc_close");
  CHECK(omlc_inject(mp, v) == -1, "omlc_inject after close returns -1");
  return 0;
}
