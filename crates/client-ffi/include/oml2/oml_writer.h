/*
 * streamgauge — writers of the liboml2-compatible C library.
 *
 * Part of streamgauge (MIT OR Apache-2.0); see docs/client-c.md.
 *
 * Writers (the objects that encode and send rows) are internal to
 * streamgauge, so this header only names the type that filter callbacks
 * receive.
 */
#ifndef STREAMGAUGE_OML2_OML_WRITER_H
#define STREAMGAUGE_OML2_OML_WRITER_H

#include <oml2/omlc.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque: streamgauge's writers are not reachable from C. */
typedef struct OmlWriter OmlWriter;

#ifdef __cplusplus
}
#endif

#endif /* STREAMGAUGE_OML2_OML_WRITER_H */
