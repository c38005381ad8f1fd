/*
 * Checks the accessor macros and the value, GUID, filter and logging
 * helpers. Prints "FAIL: <line>" and exits 1 on the first failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <oml2/omlc.h>
#include <oml2/oml_filter.h>

#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) {                                                \
      printf("FAIL: line %d: %s\n", __LINE__, #cond);             \
      return 1;                                                   \
    }                                                             \
  } while (0)

static char captured[4096];
static int captured_level = 99;

static void capture(int level, const char *fmt, ...)
{
  va_list ap;
  size_t used = strlen(captured);
  captured_level = level;
  va_start(ap, fmt);
  vsnprintf(captured + used, sizeof captured - used, fmt, ap);
  va_end(ap);
}

int main(void)
{
  const char *text = "hello";
  double d[3] = {1.0, 2.0, 3.0};
  bool b[2] = {true, false};
  long l[2] = {-1, 2};
  char buf[64];
  OmlValueU v, w;
  OmlValue ov, ov2;
  oml_guid_t g, back;
  void *p;

  omlc_zero(v);
  omlc_zero(w);

  /* Strings: pointer only, then copies. */
  omlc_set_string(v, text);
  EXPECT(omlc_get_string_ptr(v) == text);
  EXPECT(omlc_get_string_length(v) == 5 && omlc_get_string_size(v) == 0);
  omlc_set_string_copy(v, text, 4);
  EXPECT(omlc_get_string_ptr(v) != text && strcmp(omlc_get_string_ptr(v), "hell") == 0);
  EXPECT(omlc_get_string_length(v) == 4 && omlc_get_string_size(v) >= 5);
  EXPECT(omlc_get_string_is_const(v) == 0);
  omlc_copy_string(w, v);
  EXPECT(omlc_get_string_ptr(w) != omlc_get_string_ptr(v));
  EXPECT(strcmp(omlc_get_string_ptr(w), "hell") == 0);
  omlc_set_const_string(w, text);
  EXPECT(omlc_get_string_is_const(w) == 1 && omlc_get_string_ptr(w) == text);
  omlc_reset_string(w);
  EXPECT(omlc_get_string_ptr(w) == NULL && omlc_get_string_length(w) == 0);
  omlc_reset_string(v);
  EXPECT(omlc_get_string_ptr(v) == NULL && omlc_get_string_size(v) == 0);

  /* Blobs always copy. */
  omlc_set_blob(v, "\x01\x00\x02", 3);
  EXPECT(omlc_get_blob_length(v) == 3 && omlc_get_blob_size(v) >= 3);
  EXPECT(memcmp(omlc_get_blob_ptr(v), "\x01\x00\x02", 3) == 0);
  EXPECT(oml_malloc_usable_size(omlc_get_blob_ptr(v)) == omlc_get_blob_size(v));
  omlc_set_blob(v, "", 0);
  EXPECT(omlc_get_blob_length(v) == 0 && omlc_get_blob_ptr(v) != NULL);
  omlc_reset_blob(v);
  EXPECT(omlc_get_blob_ptr(v) == NULL);

  /* Vectors. */
  omlc_set_vector_double(v, d, 3);
  EXPECT(omlc_get_vector_nof_elts(v) == 3 && omlc_get_vector_elt_size(v) == sizeof(double));
  EXPECT(omlc_get_vector_length(v) == 3 * sizeof(double));
  EXPECT(((double *)omlc_get_vector_ptr(v))[2] == 3.0);
  omlc_set_vector_bool(v, b, 2);
  EXPECT(omlc_get_vector_nof_elts(v) == 2 && omlc_get_vector_elt_size(v) == sizeof(bool));
  omlc_set_vector_long(v, l, 2);
  EXPECT(omlc_get_vector_elt_size(v) == sizeof(long));
  omlc_copy_vector(w, v);
  EXPECT(omlc_get_vector_ptr(w) != omlc_get_vector_ptr(v));
  EXPECT(((long *)omlc_get_vector_ptr(w))[0] == -1);
  omlc_reset_vector(w);
  omlc_reset_vector(v);
  EXPECT(omlc_get_vector_ptr(v) == NULL && omlc_get_vector_nof_elts(v) == 0);

  /* Scalars. */
  omlc_set_uint64(v, 18446744073709551615ULL);
  EXPECT(omlc_get_uint64(v) == 18446744073709551615ULL && omlc_get_int64(v) == -1);
  omlc_set_bool(v, 42);
  EXPECT(omlc_get_bool(v) == 1 && v.boolValue == 1);

  /* Allocator. */
  p = oml_malloc(10);
  EXPECT(p != NULL && oml_malloc_usable_size(p) == 10);
  p = oml_realloc(p, 100);
  EXPECT(p != NULL && oml_malloc_usable_size(p) == 100);
  oml_free(p);
  oml_free(NULL);

  /* OmlValue helpers. */
  oml_value_init(&ov);
  oml_value_init(&ov2);
  omlc_set_string(v, "deep");
  EXPECT(oml_value_set(&ov, &v, OML_STRING_VALUE) == 0);
  EXPECT(omlc_get_string_ptr(ov.value) != omlc_get_string_ptr(v));
  EXPECT(strcmp(omlc_get_string_ptr(ov.value), "deep") == 0);
  EXPECT(oml_value_duplicate(&ov2, &ov) == 0 && oml_value_get_type(&ov2) == OML_STRING_VALUE);
  EXPECT(strcmp(oml_value_to_s(&ov2, buf, sizeof buf), "deep") == 0);
  omlc_set_string(v, NULL);
  EXPECT(oml_value_set(&ov, &v, OML_STRING_VALUE) == -1);
  oml_value_reset(&ov2);
  omlc_set_int32(v, -7);
  EXPECT(oml_value_set(&ov, &v, OML_INT32_VALUE) == 0 && oml_value_to_int(&ov) == -7);
  EXPECT(strcmp(oml_value_to_s(&ov, buf, sizeof buf), "-7") == 0);
  EXPECT(oml_value_from_typed_s(&ov, "uint64", "18446744073709551615") == 0);
  EXPECT(omlc_get_uint64(ov.value) == 18446744073709551615ULL);
  EXPECT(oml_value_from_typed_s(&ov, "double", "2.5") == 0 && oml_value_to_double(&ov) == 2.5);
  EXPECT(strcmp(oml_value_to_s(&ov, buf, sizeof buf), "2.500000") == 0);
  EXPECT(oml_value_from_typed_s(&ov, "bool", "F") == 0 && !omlc_get_bool(ov.value));
  EXPECT(oml_value_from_typed_s(&ov, "[int32]", "2 -1 5") == 0);
  EXPECT(omlc_get_vector_nof_elts(ov.value) == 2);
  EXPECT(strcmp(oml_value_to_s(&ov, buf, sizeof buf), "2 -1 5") == 0);
  EXPECT(oml_value_from_typed_s(&ov, "int32", "zz") == -1);
  oml_value_reset(&ov);
  EXPECT(strcmp(oml_type_to_s(OML_UINT64_VALUE), "uint64") == 0);
  EXPECT(strcmp(oml_type_to_s(OML_VECTOR_BOOL_VALUE), "[bool]") == 0);
  EXPECT(oml_type_from_s("long") == OML_LONG_VALUE);
  EXPECT(oml_type_from_s("nope") == OML_UNKNOWN_VALUE);

  /* GUIDs. */
  g = omlc_guid_generate();
  EXPECT(g != OMLC_GUID_NULL && g != omlc_guid_generate());
  EXPECT(omlc_guid_to_string(18446744073709551615ULL, buf) == 20);
  EXPECT(strcmp(buf, "18446744073709551615") == 0);
  EXPECT(omlc_string_to_guid(buf, &back) == 20 && back == 18446744073709551615ULL);
  EXPECT(omlc_string_to_guid("x", &back) == -1 && back == 0);

  /* Logging: level filter, custom function, o_log itself. */
  o_set_log(capture);
  o_set_log_level(O_LOG_WARN);
  EXPECT(o_log_level_active(O_LOG_WARN) && !o_log_level_active(O_LOG_INFO));
  loginfo("hidden %d\n", 1);
  EXPECT(captured[0] == '\0');
  logwarn("shown %d %s %.1f\n", 2, "two", 2.5);
  EXPECT(strcmp(captured, "shown 2 two 2.5\n") == 0 && captured_level == O_LOG_WARN);
  captured[0] = '\0';
  /* Messages from the library itself reach the custom function too. */
  EXPECT(omlf_register_filter("mine", NULL, NULL, NULL, NULL, NULL, NULL, NULL) == -1);
  EXPECT(strstr(captured, "not supported") != NULL && captured_level == O_LOG_ERROR);
  o_set_log(NULL);
  o_set_log_level(O_LOG_DEBUG);
  logdebug("to stderr %d\n", 3);
  o_log(O_LOG_DEBUG2, "filtered %d\n", 4);
  o_log(O_LOG_INFO, "direct %s\n", "o_log");

  puts("OK");
  return 0;
}
