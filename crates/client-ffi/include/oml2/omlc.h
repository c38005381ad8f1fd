/*
 * streamgauge — C API of the liboml2-compatible measurement library.
 *
 * Part of streamgauge (MIT OR Apache-2.0). Written for streamgauge from the
 * behaviour described in spec/omsp.md section 8; the manual is
 * docs/client-c.md. Programs written for liboml2 compile unchanged against
 * this header and link with -loml2 (and, optionally, -locomm).
 *
 * Typical use:
 *
 *   static OmlMPDef defs[] = { {"rtt", OML_DOUBLE_VALUE}, {NULL, (OmlValueT)0} };
 *   if (omlc_init("ping", &argc, (const char **)argv, NULL) == -1) exit(1);
 *   OmlMP *mp = omlc_add_mp("probe", defs);
 *   omlc_start();
 *   OmlValueU v[1];
 *   omlc_zero_array(v, 1);
 *   omlc_set_double(v[0], 1.5);
 *   omlc_inject(mp, v);
 *   omlc_close();
 */
#ifndef STREAMGAUGE_OML2_OMLC_H
#define STREAMGAUGE_OML2_OMLC_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <errno.h>
#include <pthread.h>
#include <sys/types.h>
#include <ocomm/o_log.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Memory used by the value macros. Blocks from oml_malloc carry their size,
 * so oml_malloc_usable_size and oml_free only accept blocks from these
 * functions (never from malloc). oml_free(NULL) does nothing.
 * ------------------------------------------------------------------------ */
void *oml_malloc(size_t size);
void *oml_calloc(size_t count, size_t size);
void *oml_realloc(void *ptr, size_t size);
void oml_free(void *ptr);
size_t oml_malloc_usable_size(void *ptr);
char *oml_strndup(const char *s, size_t len);

/* ------------------------------------------------------------------------
 * Value types. The numbering is part of the ABI.
 * ------------------------------------------------------------------------ */
typedef enum _omlValueE {
  OML_DB_PRIMARY_KEY = -3,
  OML_INPUT_VALUE = -2,      /* filter output: same type as the input */
  OML_UNKNOWN_VALUE = -1,
  OML_DOUBLE_VALUE = 0,
  OML_LONG_VALUE = 1,        /* deprecated: C long, sent as int32 */
  OML_PADDING1_VALUE = 2,
  OML_STRING_VALUE = 3,
  OML_INT32_VALUE = 4,
  OML_UINT32_VALUE = 5,
  OML_INT64_VALUE = 6,
  OML_UINT64_VALUE = 7,
  OML_BLOB_VALUE = 8,
  OML_GUID_VALUE = 9,
  OML_BOOL_VALUE = 10,
  OML_VECTOR_DOUBLE_VALUE = 11,
  OML_VECTOR_INT32_VALUE = 12,
  OML_VECTOR_UINT32_VALUE = 13,
  OML_VECTOR_INT64_VALUE = 14,
  OML_VECTOR_UINT64_VALUE = 15,
  OML_VECTOR_BOOL_VALUE = 16,
  OML_LAST_VALUE = 17
} OmlValueT;

#define omlc_is_integer_type(t) \
  ((t) == OML_LONG_VALUE || (t) == OML_INT32_VALUE || (t) == OML_UINT32_VALUE || \
   (t) == OML_INT64_VALUE || (t) == OML_UINT64_VALUE)
#define omlc_is_numeric_type(t) (omlc_is_integer_type(t) || (t) == OML_DOUBLE_VALUE)
#define omlc_is_string_type(t) ((t) == OML_STRING_VALUE)
#define omlc_is_blob_type(t) ((t) == OML_BLOB_VALUE)
#define omlc_is_guid_type(t) ((t) == OML_GUID_VALUE)
#define omlc_is_bool_type(t) ((t) == OML_BOOL_VALUE)
#define omlc_is_vector_type(t) \
  ((t) >= OML_VECTOR_DOUBLE_VALUE && (t) <= OML_VECTOR_BOOL_VALUE)

/* The same tests on an OmlValue (anything with a .type member). */
#define omlc_is_integer(v) omlc_is_integer_type((v).type)
#define omlc_is_numeric(v) omlc_is_numeric_type((v).type)
#define omlc_is_string(v) omlc_is_string_type((v).type)
#define omlc_is_blob(v) omlc_is_blob_type((v).type)
#define omlc_is_guid(v) omlc_is_guid_type((v).type)
#define omlc_is_bool(v) omlc_is_bool_type((v).type)
#define omlc_is_vector(v) omlc_is_vector_type((v).type)

/* A string value. size > 0 means ptr is owned (allocated by oml_malloc). */
typedef struct _omlString {
  char *ptr;        /* the characters, NUL-terminated when owned */
  size_t length;    /* characters, without the terminator */
  size_t size;      /* bytes allocated; 0 = not owned */
  int is_const;     /* deprecated: set by omlc_set_const_string */
} OmlString;

/* A blob value. size > 0 means ptr is owned. */
typedef struct _omlBlob {
  void *ptr;
  size_t length;    /* bytes of data */
  size_t size;      /* bytes allocated; 0 = not owned */
} OmlBlob;

/* A vector value: nof_elts elements of elt_sz bytes each. */
typedef struct _omlVector {
  void *ptr;
  size_t length;    /* bytes of data (nof_elts * elt_sz) */
  size_t size;      /* bytes allocated; 0 = not owned */
  uint16_t nof_elts;
  uint16_t elt_sz;
} OmlVector;

typedef uint64_t oml_guid_t;
#define OMLC_GUID_NULL ((oml_guid_t)0)
#define OMLC_BOOL_FALSE 0
#define OMLC_BOOL_TRUE (!0)

/* One value of any type. Zero it (omlc_zero) before first use. */
typedef union _omlValueU {
  long longValue;
  double doubleValue;
  OmlString stringValue;
  int32_t int32Value;
  uint32_t uint32Value;
  int64_t int64Value;
  uint64_t uint64Value;
  OmlBlob blobValue;
  oml_guid_t guidValue;
  uint8_t boolValue;
  OmlVector vectorValue;
} OmlValueU;

/* A value with its type. */
typedef struct _omlValue {
  OmlValueT type;
  OmlValueU value;
} OmlValue;

/* ------------------------------------------------------------------------
 * Accessor macros. `var` is an OmlValueU lvalue. Setters that copy
 * (omlc_set_string_copy, omlc_set_blob, omlc_set_vector_*) make `var` own
 * memory: release it with the matching omlc_reset_* when done.
 * ------------------------------------------------------------------------ */
#define omlc_zero(var) memset(&(var), 0, sizeof(OmlValueU))
#define omlc_zero_array(var, n) memset((var), 0, (size_t)(n) * sizeof(OmlValueU))

#define omlc_get_int32(var) ((int32_t)(var).int32Value)
#define omlc_get_uint32(var) ((uint32_t)(var).uint32Value)
#define omlc_get_int64(var) ((int64_t)(var).int64Value)
#define omlc_get_uint64(var) ((uint64_t)(var).uint64Value)
#define omlc_get_double(var) ((double)(var).doubleValue)
#define omlc_get_long(var) ((long)(var).longValue)
#define omlc_get_guid(var) ((oml_guid_t)(var).guidValue)
#define omlc_get_bool(var) ((var).boolValue != OMLC_BOOL_FALSE)

#define omlc_set_int32(var, val) ((var).int32Value = (int32_t)(val))
#define omlc_set_uint32(var, val) ((var).uint32Value = (uint32_t)(val))
#define omlc_set_int64(var, val) ((var).int64Value = (int64_t)(val))
#define omlc_set_uint64(var, val) ((var).uint64Value = (uint64_t)(val))
#define omlc_set_double(var, val) ((var).doubleValue = (double)(val))
#define omlc_set_long(var, val) ((var).longValue = (long)(val))
#define omlc_set_guid(var, val) ((var).guidValue = (oml_guid_t)(val))
#define omlc_set_bool(var, val) \
  ((var).boolValue = (uint8_t)((val) ? OMLC_BOOL_TRUE : OMLC_BOOL_FALSE))

/* Strings: fields. */
#define omlc_get_string_ptr(var) ((var).stringValue.ptr)
#define omlc_get_string_length(var) ((var).stringValue.length)
#define omlc_get_string_size(var) ((var).stringValue.size)
#define omlc_get_string_is_const(var) ((var).stringValue.is_const)
#define omlc_set_string_ptr(var, val) ((var).stringValue.ptr = (char *)(val))
#define omlc_set_string_length(var, val) ((var).stringValue.length = (size_t)(val))
#define omlc_set_string_size(var, val) ((var).stringValue.size = (size_t)(val))
#define omlc_set_string_is_const(var, val) ((var).stringValue.is_const = (int)(val))

/* Frees owned storage; ptr is left as it was (dangling). */
#define omlc_free_string(var)                     \
  do {                                            \
    if ((var).stringValue.size > 0) {             \
      oml_free((var).stringValue.ptr);            \
      (var).stringValue.size = 0;                 \
    }                                             \
  } while (0)

/* Frees owned storage and empties the value. */
#define omlc_reset_string(var)                    \
  do {                                            \
    omlc_free_string(var);                        \
    (var).stringValue.ptr = NULL;                 \
    (var).stringValue.length = 0;                 \
    (var).stringValue.is_const = 0;               \
  } while (0)

/* Points at the caller's string (not copied: it must stay valid until the
 * omlc_inject that uses it returns). */
#define omlc_set_string(var, str)                                         \
  do {                                                                    \
    const char *omlc_ss_src_ = (const char *)(str);                                   \
    omlc_reset_string(var);                                               \
    (var).stringValue.ptr = (char *)omlc_ss_src_;                         \
    (var).stringValue.length = omlc_ss_src_ ? strlen(omlc_ss_src_) : 0;   \
  } while (0)

/* Deprecated: like omlc_set_string, marked constant. */
#define omlc_set_const_string(var, str)                                   \
  do {                                                                    \
    const char *omlc_scs_src_ = (const char *)(str);                                  \
    omlc_free_string(var);                                                \
    (var).stringValue.ptr = (char *)omlc_scs_src_;                        \
    (var).stringValue.length = omlc_scs_src_ ? strlen(omlc_scs_src_) : 0; \
    (var).stringValue.is_const = 1;                                       \
  } while (0)

/* Copies len characters of str into owned storage and NUL-terminates. */
#define omlc_set_string_copy(var, str, len)                                   \
  do {                                                                        \
    const char *omlc_sc_src_ = (const char *)(str);                           \
    size_t omlc_sc_len_ = omlc_sc_src_ ? (size_t)(len) : 0;                   \
    if ((var).stringValue.size < omlc_sc_len_ + 1) {                          \
      omlc_reset_string(var);                                                 \
      (var).stringValue.ptr = (char *)oml_malloc(omlc_sc_len_ + 1);           \
      (var).stringValue.size =                                                \
          (var).stringValue.ptr ? oml_malloc_usable_size((var).stringValue.ptr) : 0; \
    }                                                                         \
    if ((var).stringValue.ptr) {                                              \
      if (omlc_sc_len_ > 0)                                                   \
        memmove((var).stringValue.ptr, omlc_sc_src_, omlc_sc_len_);           \
      (var).stringValue.ptr[omlc_sc_len_] = '\0';                             \
      (var).stringValue.length = omlc_sc_len_;                                \
    } else {                                                                  \
      (var).stringValue.length = 0;                                           \
    }                                                                         \
    (var).stringValue.is_const = 0;                                           \
  } while (0)

/* Deep copy of the string in src into dst. */
#define omlc_copy_string(dst, src) \
  omlc_set_string_copy(dst, (src).stringValue.ptr, (src).stringValue.length)

/* Blobs. */
#define omlc_get_blob_ptr(var) ((void *)(var).blobValue.ptr)
#define omlc_get_blob_length(var) ((var).blobValue.length)
#define omlc_get_blob_size(var) ((var).blobValue.size)
#define omlc_set_blob_ptr(var, val) ((var).blobValue.ptr = (void *)(val))
#define omlc_set_blob_length(var, val) ((var).blobValue.length = (size_t)(val))
#define omlc_set_blob_size(var, val) ((var).blobValue.size = (size_t)(val))

#define omlc_free_blob(var)                       \
  do {                                            \
    if ((var).blobValue.size > 0) {               \
      oml_free((var).blobValue.ptr);              \
      (var).blobValue.size = 0;                   \
    }                                             \
  } while (0)

#define omlc_reset_blob(var)                      \
  do {                                            \
    omlc_free_blob(var);                          \
    (var).blobValue.ptr = NULL;                   \
    (var).blobValue.length = 0;                   \
  } while (0)

/* Copies len bytes of data into owned storage (an empty blob still gets a
 * non-NULL pointer). */
#define omlc_set_blob_copy(var, data, len)                                    \
  do {                                                                        \
    const void *omlc_sb_src_ = (const void *)(data);                          \
    size_t omlc_sb_len_ = omlc_sb_src_ ? (size_t)(len) : 0;                   \
    if ((var).blobValue.size == 0 || (var).blobValue.size < omlc_sb_len_) {   \
      omlc_reset_blob(var);                                                   \
      (var).blobValue.ptr = oml_malloc(omlc_sb_len_ ? omlc_sb_len_ : 1);      \
      (var).blobValue.size =                                                  \
          (var).blobValue.ptr ? oml_malloc_usable_size((var).blobValue.ptr) : 0; \
    }                                                                         \
    if ((var).blobValue.ptr && omlc_sb_len_ > 0)                              \
      memmove((var).blobValue.ptr, omlc_sb_src_, omlc_sb_len_);               \
    (var).blobValue.length = (var).blobValue.ptr ? omlc_sb_len_ : 0;          \
  } while (0)

#define omlc_set_blob(var, data, len) omlc_set_blob_copy(var, data, len)

#define omlc_copy_blob(dst, src) \
  omlc_set_blob_copy(dst, (src).blobValue.ptr, (src).blobValue.length)

/* Vectors. */
#define omlc_get_vector_ptr(var) ((void *)(var).vectorValue.ptr)
#define omlc_get_vector_length(var) ((var).vectorValue.length)
#define omlc_get_vector_size(var) ((var).vectorValue.size)
#define omlc_get_vector_nof_elts(var) ((var).vectorValue.nof_elts)
#define omlc_get_vector_elt_size(var) ((var).vectorValue.elt_sz)
#define omlc_set_vector_ptr(var, val) ((var).vectorValue.ptr = (void *)(val))
#define omlc_set_vector_length(var, val) ((var).vectorValue.length = (size_t)(val))
#define omlc_set_vector_size(var, val) ((var).vectorValue.size = (size_t)(val))
#define omlc_set_vector_nof_elts(var, val) ((var).vectorValue.nof_elts = (uint16_t)(val))
#define omlc_set_vector_elt_size(var, val) ((var).vectorValue.elt_sz = (uint16_t)(val))

#define omlc_free_vector(var)                     \
  do {                                            \
    if ((var).vectorValue.size > 0) {             \
      oml_free((var).vectorValue.ptr);            \
      (var).vectorValue.size = 0;                 \
    }                                             \
  } while (0)

#define omlc_reset_vector(var)                    \
  do {                                            \
    omlc_free_vector(var);                        \
    (var).vectorValue.ptr = NULL;                 \
    (var).vectorValue.length = 0;                 \
    (var).vectorValue.nof_elts = 0;               \
    (var).vectorValue.elt_sz = 0;                 \
  } while (0)

/* Copies n elements of elt_size bytes into owned storage. Vectors hold at
 * most 65535 elements; larger counts are cut to 65535. */
#define omlc_set_vector_copy_(var, data, n, elt_size)                         \
  do {                                                                        \
    const void *omlc_sv_src_ = (const void *)(data);                          \
    size_t omlc_sv_n_ = omlc_sv_src_ ? (size_t)(n) : 0;                      \
    size_t omlc_sv_bytes_;                                                    \
    if (omlc_sv_n_ > 65535u)                                                  \
      omlc_sv_n_ = 65535u;                                                    \
    omlc_sv_bytes_ = omlc_sv_n_ * (size_t)(elt_size);                         \
    if ((var).vectorValue.size == 0 || (var).vectorValue.size < omlc_sv_bytes_) { \
      omlc_reset_vector(var);                                                 \
      (var).vectorValue.ptr = oml_malloc(omlc_sv_bytes_ ? omlc_sv_bytes_ : 1); \
      (var).vectorValue.size =                                                \
          (var).vectorValue.ptr ? oml_malloc_usable_size((var).vectorValue.ptr) : 0; \
    }                                                                         \
    if (!(var).vectorValue.ptr)                                               \
      omlc_sv_n_ = omlc_sv_bytes_ = 0;                                        \
    if (omlc_sv_bytes_ > 0)                                                   \
      memmove((var).vectorValue.ptr, omlc_sv_src_, omlc_sv_bytes_);           \
    (var).vectorValue.length = omlc_sv_bytes_;                                \
    (var).vectorValue.nof_elts = (uint16_t)omlc_sv_n_;                        \
    (var).vectorValue.elt_sz = (uint16_t)(elt_size);                          \
  } while (0)

#define omlc_set_vector_double(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(double))
#define omlc_set_vector_long(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(long))
#define omlc_set_vector_int32(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(int32_t))
#define omlc_set_vector_uint32(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(uint32_t))
#define omlc_set_vector_int64(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(int64_t))
#define omlc_set_vector_uint64(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(uint64_t))
#define omlc_set_vector_bool(var, data, n) omlc_set_vector_copy_(var, data, n, sizeof(bool))

/* Deep copy of the vector in src into dst. */
#define omlc_copy_vector(dst, src)                                            \
  omlc_set_vector_copy_(dst, (src).vectorValue.ptr, (src).vectorValue.nof_elts, \
                        (src).vectorValue.elt_sz)

/* ------------------------------------------------------------------------
 * Measurement points.
 * ------------------------------------------------------------------------ */

/* One field of a measurement point. Arrays of these end with
 * {NULL, (OmlValueT)0}. */
typedef struct _omlMPDef {
  const char *name;
  OmlValueT param_types;
} OmlMPDef;

struct _omlMStream;
struct _omlFilter;
struct OmlWriter;

/* A measurement point, as returned by omlc_add_mp. Only ever use pointers
 * to it: the library's object is larger than this declaration, so never
 * allocate, copy or free one. The public fields are informational. */
typedef struct _omlMP {
  const char *name;              /* MP name (the library's copy) */
  OmlMPDef *param_defs;          /* fields (the library's copy) */
  int param_count;               /* number of fields */
  int table_count;               /* streams fed by this MP */
  struct _omlMStream *streams;   /* its default stream */
  int active;                    /* non-zero while the library is started */
  pthread_mutex_t *mutexP;       /* points at mutex */
  pthread_mutex_t mutex;         /* not used by the library */
  struct _omlMP *next;           /* next MP, in registration order */
  struct _omlMStream *default_ms;
} OmlMP;

/* A measurement stream (informational: the streaming itself is internal). */
typedef struct _omlMStream {
  char table_name[64];           /* <app>_<mp>, NUL-terminated */
  OmlMP *mp;
  OmlValue **values;
  struct _omlFilter *filters;
  int index;
  int sample_size;
  int sample_thres;
  double sample_interval;
  long seq_no;
  pthread_cond_t condVar;
  pthread_t filter_thread;
  struct OmlWriter *writer;      /* deprecated */
  struct _omlMStream *next;
  long meta_seq_no;
  struct OmlWriter **writers;
  int nwriters;
  uint32_t written;
  uint32_t dropped;
} OmlMStream;

/* ------------------------------------------------------------------------
 * Library lifecycle. See docs/client-c.md for the full semantics.
 * ------------------------------------------------------------------------ */

/* Reads and removes the --oml-* options from argv (compacting it and
 * updating *argc), and the OML_* environment variables. Returns 0, 1 if
 * --oml-noop was given (the library then stays disabled) or -1 on error
 * (invalid application name, bad option). --oml-help and
 * --oml-list-filters print and exit(0). log_fn, if not NULL, replaces the
 * log output function (see o_set_log). */
int omlc_init(const char *application, int *argc, const char **argv, o_log_fn log_fn);

/* Declares a measurement point; mp_def ends with {NULL, 0}. The name and
 * definitions are copied. Returns NULL on error (invalid or duplicate
 * names, no fields, not initialised). Works after omlc_start too. */
OmlMP *omlc_add_mp(const char *mp_name, OmlMPDef *mp_def);

/* Starts measuring: builds streams, filters and destinations. Returns 0,
 * or -1 if the configuration or a destination is unusable. */
int omlc_start(void);

/* Injects one sample: values[i] is read as the type of field i. The values
 * are copied before the call returns. Returns 0 (also when the overload
 * policy dropped the sample), or -1 before omlc_start, after omlc_close or
 * for NULL arguments. */
int omlc_inject(OmlMP *mp, OmlValueU *values);

/* Deprecated alias of omlc_inject. */
void omlc_process(OmlMP *mp, OmlValueU *values);

/* Attaches metadata to a measurement point (mp != NULL; subject
 * ".<app>_<mp>", or ".<app>_<mp>.<fname>" for a field) or to the whole
 * application (mp == NULL, subject "."). Only OML_STRING_VALUE values are
 * accepted; key must be a valid name. Returns 0 or -1. */
int omlc_inject_metadata(OmlMP *mp, const char *key, const OmlValueU *value,
                         OmlValueT type, const char *fname);

/* Flushes every stream and destination and stops measuring. Later
 * injections return -1. Returns 0. */
int omlc_close(void);

/* ------------------------------------------------------------------------
 * GUIDs.
 * ------------------------------------------------------------------------ */
#define MAX_GUID_STRING_SZ 21

/* A random non-zero 64-bit identifier. */
oml_guid_t omlc_guid_generate(void);
/* Writes the decimal form of in (at most 20 digits and a NUL) into out;
 * returns the number of characters written. */
size_t omlc_guid_to_string(oml_guid_t in, char *out);
/* Parses a decimal GUID; returns the characters read, or -1 (and *out = 0)
 * if in is not a decimal number below 2^64. */
ssize_t omlc_string_to_guid(const char *in, oml_guid_t *out);

/* ------------------------------------------------------------------------
 * OmlValue helpers.
 * ------------------------------------------------------------------------ */
void oml_value_init(OmlValue *v);
void oml_value_array_init(OmlValue *v, unsigned int n);
/* Changes the type, releasing what the old value owned. */
void oml_value_set_type(OmlValue *v, OmlValueT type);
OmlValueT oml_value_get_type(OmlValue *v);
OmlValueU *oml_value_get_value(OmlValue *v);
/* Deep-copies value (of type) into to. Returns 0, or -1 for a NULL string
 * or blob pointer or an unknown type. */
int oml_value_set(OmlValue *to, const OmlValueU *value, OmlValueT type);
/* Deep copy of src into dst. */
int oml_value_duplicate(OmlValue *dst, OmlValue *src);
/* Releases what v owns and zeroes it. Returns 0. */
int oml_value_reset(OmlValue *v);
void oml_value_array_reset(OmlValue *v, unsigned int n);
/* Writes a text form of value into buf (size bytes, NUL-terminated,
 * truncated if needed). Returns buf, or NULL for an unknown type. */
char *oml_value_to_s(OmlValue *value, char *buf, size_t size);
/* Parses value_s as value's current type. Returns 0 or -1. */
int oml_value_from_s(OmlValue *value, const char *value_s);
/* Sets value's type from a type name, then parses value_s. */
int oml_value_from_typed_s(OmlValue *value, const char *type_s, const char *value_s);
/* Numeric value as a double / int (0 for non-numeric types). */
double oml_value_to_double(OmlValue *value);
int oml_value_to_int(OmlValue *value);
/* Schema name of a type ("int32", "[double]", ...), or "unknown". */
const char *oml_type_to_s(OmlValueT type);
/* Type of a schema name (legacy names included), or OML_UNKNOWN_VALUE. */
OmlValueT oml_type_from_s(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* STREAMGAUGE_OML2_OMLC_H */
