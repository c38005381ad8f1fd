/*
 * streamgauge — logging interface of the liboml2-compatible C library.
 *
 * Part of streamgauge (MIT OR Apache-2.0). Written for streamgauge from the
 * behaviour described in spec/omsp.md section 8; see docs/client-c.md.
 *
 * liboml2 programs include this header through <oml2/omlc.h>; the functions
 * live in liboml2 itself (libocomm is an empty compatibility library).
 */
#ifndef STREAMGAUGE_OCOMM_O_LOG_H
#define STREAMGAUGE_OCOMM_O_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels. A message is written when its level is at most the current
 * threshold (o_set_log_level); the default threshold is O_LOG_INFO. */
#define O_LOG_ERROR  (-2)
#define O_LOG_WARN   (-1)
#define O_LOG_INFO   0
#define O_LOG_DEBUG  1
#define O_LOG_DEBUG2 2
#define O_LOG_DEBUG3 3
#define O_LOG_DEBUG4 4

/* A log output function: printf-style format and arguments at a level. */
typedef void (*o_log_fn)(int log_level, const char *format, ...);

/* The current output function. It starts as the library's own writer (to
 * standard error, or to the file given to o_set_log_file). Calling it
 * directly filters by level like the log* functions below. */
extern o_log_fn o_log;

/* Replaces the output function; NULL restores the library's own. The
 * library still filters by level before calling it. */
void o_set_log(o_log_fn new_log_fn);

/* Sends the library's own output to this file (appending); "-" or NULL
 * means standard error. The name is copied. */
void o_set_log_file(char *name);

/* Sets the threshold: messages above this level are discarded. */
void o_set_log_level(int level);

/* Drops the date from lines written to a file ("LEVEL\tmessage"). */
void o_set_simplified_logging(void);

/* Non-zero if a message at this level would be written. */
int o_log_level_active(int level);

/* printf-style logging at a fixed level. (No format attribute: programs
 * written for liboml2 must keep compiling under -Werror.) */
void logerror(const char *fmt, ...);
void logwarn(const char *fmt, ...);
void loginfo(const char *fmt, ...);
void logdebug(const char *fmt, ...);
void logdebug2(const char *fmt, ...);
void logdebug3(const char *fmt, ...);
void logdebug4(const char *fmt, ...);

#ifdef __cplusplus
}
#endif

#endif /* STREAMGAUGE_OCOMM_O_LOG_H */
