/*
 * Uses every macro and declaration of the headers, compiled by the tests
 * with -Wall -Wextra -Werror -pedantic as C99, C11 and C++.
 */
#include <oml2/omlc.h>
#include <oml2/oml_filter.h>
#include <oml2/oml_writer.h>
#include <ocomm/o_log.h>

static OmlMPDef defs[] = {
  {"a", OML_INT32_VALUE},
  {"b", OML_VECTOR_BOOL_VALUE},
  {NULL, (OmlValueT)0},
};

static void my_log(int level, const char *fmt, ...)
{
  (void)level;
  (void)fmt;
}

int exercise(void);

int exercise(void)
{
  OmlValueU v[3], w;
  OmlValue ov;
  double d[2] = {1.0, 2.0};
  long l[1] = {3};
  int32_t i32[1] = {1};
  uint32_t u32[1] = {1};
  int64_t i64[1] = {1};
  uint64_t u64[1] = {1};
  bool b[1] = {true};
  char buf[MAX_GUID_STRING_SZ];
  oml_guid_t g = OMLC_GUID_NULL;
  OmlMP *mp;
  int n = 0;

  omlc_zero(w);
  omlc_zero_array(v, 3);
  omlc_set_int32(v[0], 1);
  omlc_set_uint32(v[0], 1u);
  omlc_set_int64(v[0], 1);
  omlc_set_uint64(v[0], 1u);
  omlc_set_double(v[0], 1.0);
  omlc_set_long(v[0], 1L);
  omlc_set_guid(v[0], g);
  omlc_set_bool(v[0], OMLC_BOOL_TRUE);
  n += (int)omlc_get_int32(v[0]) + (int)omlc_get_uint32(v[0]) + (int)omlc_get_int64(v[0]);
  n += (int)omlc_get_uint64(v[0]) + (int)omlc_get_double(v[0]) + (int)omlc_get_long(v[0]);
  n += (int)omlc_get_guid(v[0]) + (int)omlc_get_bool(v[0]);

  omlc_set_string(v[1], "s");
  omlc_set_const_string(v[1], "c");
  omlc_set_string_copy(v[1], "copy", 4);
  omlc_copy_string(w, v[1]);
  n += (int)omlc_get_string_length(w) + (int)omlc_get_string_size(w) + omlc_get_string_is_const(w);
  n += omlc_get_string_ptr(w)[0];
  omlc_set_string_ptr(w, omlc_get_string_ptr(w));
  omlc_set_string_length(w, 4);
  omlc_set_string_size(w, omlc_get_string_size(w));
  omlc_set_string_is_const(w, 0);
  omlc_reset_string(w);
  omlc_free_string(v[1]);
  omlc_reset_string(v[1]);

  omlc_set_blob(v[2], "ab", 2);
  omlc_set_blob_copy(v[2], "abc", 3);
  omlc_copy_blob(w, v[2]);
  n += (int)omlc_get_blob_length(w) + (int)omlc_get_blob_size(w) + (omlc_get_blob_ptr(w) != NULL);
  omlc_set_blob_ptr(w, omlc_get_blob_ptr(w));
  omlc_set_blob_length(w, 3);
  omlc_set_blob_size(w, omlc_get_blob_size(w));
  omlc_reset_blob(w);
  omlc_free_blob(v[2]);
  omlc_reset_blob(v[2]);

  omlc_set_vector_double(v[2], d, 2);
  omlc_set_vector_long(v[2], l, 1);
  omlc_set_vector_int32(v[2], i32, 1);
  omlc_set_vector_uint32(v[2], u32, 1);
  omlc_set_vector_int64(v[2], i64, 1);
  omlc_set_vector_uint64(v[2], u64, 1);
  omlc_set_vector_bool(v[2], b, 1);
  omlc_copy_vector(w, v[2]);
  n += (int)omlc_get_vector_length(w) + (int)omlc_get_vector_size(w);
  n += (int)omlc_get_vector_nof_elts(w) + (int)omlc_get_vector_elt_size(w);
  n += omlc_get_vector_ptr(w) != NULL;
  omlc_set_vector_ptr(w, omlc_get_vector_ptr(w));
  omlc_set_vector_length(w, 1);
  omlc_set_vector_size(w, omlc_get_vector_size(w));
  omlc_set_vector_nof_elts(w, 1);
  omlc_set_vector_elt_size(w, 1);
  if (n > 0)
    omlc_reset_vector(w);
  else
    omlc_free_vector(w);
  omlc_reset_vector(v[2]);

  oml_value_init(&ov);
  oml_value_set_type(&ov, OML_STRING_VALUE);
  n += omlc_is_string(ov) + omlc_is_integer(ov) + omlc_is_numeric(ov) + omlc_is_blob(ov);
  n += omlc_is_guid(ov) + omlc_is_bool(ov) + omlc_is_vector(ov);
  n += omlc_is_vector_type(OML_VECTOR_INT32_VALUE) + omlc_is_guid_type(OML_GUID_VALUE);
  n += omlc_is_bool_type(OML_BOOL_VALUE) + omlc_is_blob_type(OML_BLOB_VALUE);
  n += omlc_is_string_type(oml_value_get_type(&ov)) + (oml_value_get_value(&ov) != NULL);
  oml_value_set(&ov, &v[1], OML_STRING_VALUE);
  oml_value_reset(&ov);
  n += (int)oml_value_to_double(&ov) + oml_value_to_int(&ov);
  n += oml_type_to_s(oml_type_from_s("int32"))[0];
  n += (int)omlc_guid_to_string(omlc_guid_generate(), buf);
  n += (int)omlc_string_to_guid(buf, &g);
  n += (oml_value_to_s(&ov, buf, sizeof buf) != NULL);
  n += omlf_register_filter("f", NULL, NULL, NULL, NULL, NULL, NULL, NULL);

  o_set_log(my_log);
  o_set_log(NULL);
  o_set_log_level(O_LOG_DEBUG4);
  o_set_log_file((char *)"-");
  o_set_simplified_logging();
  n += o_log_level_active(O_LOG_WARN);
  o_log(O_LOG_INFO, "%d", n);
  logerror("%d", n);
  logwarn("%d", n);
  loginfo("%d", n);
  logdebug("%d", n);
  logdebug2("%d", n);
  logdebug3("%d", n);
  logdebug4("%d", n);

  mp = omlc_add_mp("x", defs);
  if (mp != NULL && mp->param_count == 2 && mp->streams != NULL)
    n += mp->streams->table_name[0] + mp->param_defs[0].param_types;
  omlc_process(mp, v);
  n += omlc_inject(mp, v) + omlc_start() + omlc_close();
  return n + omlc_inject_metadata(NULL, "k", &v[1], OML_STRING_VALUE, NULL);
}

int main(int argc, char **argv)
{
  (void)argv;
  /* Linked (so every declaration must exist in the library), never run. */
  return argc > 1000 ? exercise() : 0;
}
