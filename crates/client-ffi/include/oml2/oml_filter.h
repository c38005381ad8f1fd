/*
 * streamgauge — filter registration of the liboml2-compatible C library.
 *
 * Part of streamgauge (MIT OR Apache-2.0). Written for streamgauge from the
 * behaviour described in spec/omsp.md section 8.6; see docs/client-c.md.
 *
 * streamgauge's filters are written in Rust (delta, sum, stddev, last,
 * first, avg and more; see --oml-list-filters). Custom filters written in C
 * are not supported yet: omlf_register_filter logs an error and returns -1.
 * The types below let programs that define such filters compile.
 */
#ifndef STREAMGAUGE_OML2_OML_FILTER_H
#define STREAMGAUGE_OML2_OML_FILTER_H

#include <oml2/omlc.h>
#include <oml2/oml_writer.h>

#ifdef __cplusplus
extern "C" {
#endif

struct OmlFilter;

/* Creates a filter instance for an input of this type; result has one
 * OmlValue per output. Returns the instance data. */
typedef void *(*oml_filter_create)(OmlValueT type, OmlValue *result);
/* Sets a filter property. Returns 0 or -1. */
typedef int (*oml_filter_set)(struct OmlFilter *filter, const char *name, OmlValue *value);
/* Feeds one sample. Returns 0 or -1. */
typedef int (*oml_filter_input)(struct OmlFilter *filter, OmlValue *value);
/* Writes the window's result. Returns 0 or -1. */
typedef int (*oml_filter_output)(struct OmlFilter *filter, struct OmlWriter *writer);
/* Starts a new window. Returns 0 or -1. */
typedef int (*oml_filter_newwindow)(struct OmlFilter *filter);
/* Names and types output number index_offset. Returns 0 or -1. */
typedef int (*oml_filter_meta)(struct OmlFilter *filter, int index_offset, char **name,
                               OmlValueT *type);

/* One output column of a filter; arrays end with {NULL, (OmlValueT)0}.
 * OML_INPUT_VALUE means "the input's type". */
typedef struct OmlFilterDef {
  const char *name;
  OmlValueT type;
} OmlFilterDef;

/* A filter instance. */
typedef struct OmlFilter {
  char name[64];
  int output_count;
  oml_filter_set set;
  oml_filter_input input;
  oml_filter_output output;
  oml_filter_meta meta;
  void *instance_data;
  OmlFilterDef *definition;
  int index;
  OmlValueT input_type;
  OmlValue *result;
  struct OmlFilter *next;
  oml_filter_newwindow newwindow;
} OmlFilter;

/* Registers a filter type written in C. Not supported by streamgauge yet:
 * logs an error and returns -1. */
int omlf_register_filter(const char *filter_name, oml_filter_create create, oml_filter_set set,
                         oml_filter_input input, oml_filter_output output,
                         oml_filter_newwindow newwindow, oml_filter_meta meta,
                         OmlFilterDef *filter_def);

#ifdef __cplusplus
}
#endif

#endif /* STREAMGAUGE_OML2_OML_FILTER_H */
