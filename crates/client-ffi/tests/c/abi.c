/* Prints the sizes and offsets the C compiler gives the header's types. */
#include <stddef.h>
#include <stdio.h>

#include <oml2/omlc.h>

#define P(expr) printf("%s=%lu\n", #expr, (unsigned long)(expr))

int main(void)
{
  P(sizeof(OmlValueT));
  P(sizeof(OmlString));
  P(offsetof(OmlString, length));
  P(offsetof(OmlString, size));
  P(offsetof(OmlString, is_const));
  P(sizeof(OmlBlob));
  P(offsetof(OmlBlob, length));
  P(offsetof(OmlBlob, size));
  P(sizeof(OmlVector));
  P(offsetof(OmlVector, length));
  P(offsetof(OmlVector, size));
  P(offsetof(OmlVector, nof_elts));
  P(offsetof(OmlVector, elt_sz));
  P(sizeof(OmlValueU));
  P(sizeof(OmlValue));
  P(offsetof(OmlValue, value));
  P(sizeof(OmlMPDef));
  P(offsetof(OmlMPDef, param_types));
  P(offsetof(OmlMP, param_defs));
  P(offsetof(OmlMP, param_count));
  P(offsetof(OmlMP, table_count));
  P(offsetof(OmlMP, streams));
  P(offsetof(OmlMP, active));
  P(offsetof(OmlMP, mutexP));
  P(offsetof(OmlMP, mutex));
  P(offsetof(OmlMP, next));
  P(offsetof(OmlMP, default_ms));
  P(sizeof(OmlMStream));
  P(offsetof(OmlMStream, mp));
  P(offsetof(OmlMStream, index));
  P(offsetof(OmlMStream, sample_interval));
  P(offsetof(OmlMStream, seq_no));
  P(offsetof(OmlMStream, condVar));
  P(offsetof(OmlMStream, filter_thread));
  P(offsetof(OmlMStream, meta_seq_no));
  P(offsetof(OmlMStream, written));
  P(offsetof(OmlMStream, dropped));
  return 0;
}
