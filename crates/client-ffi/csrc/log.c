/*
 * streamgauge — the variadic logging functions of liboml2 (libocomm).
 *
 * Rust cannot define C variadic functions, so they live here: each formats
 * its message with vsnprintf and hands the text to Rust (src/log.rs), or to
 * the application's o_log function if it replaced ours. The exported names
 * (logerror, ...) are Rust trampolines that jump to the sg_ffi_* functions
 * below (src/log/trampoline.rs), because a Rust cdylib only exports symbols
 * defined in Rust.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ocomm/o_log.h"

/* Implemented in Rust (src/log.rs). */
int sg_ffi_log_threshold(void);
void sg_ffi_log_write(int level, const char *msg);

void sg_ffi_default_log(int level, const char *fmt, ...);

/* Sends a formatted message to the current output function. */
static void sg_dispatch(int level, const char *msg)
{
  o_log_fn f = o_log;
  if (f == NULL || f == sg_ffi_default_log)
    sg_ffi_log_write(level, msg);
  else
    f(level, "%s", msg);
}

/* Formats and delivers one message (to our writer only, or dispatched). */
static void sg_vlog(int level, int dispatch, const char *fmt, va_list ap)
{
  char stack[1024];
  char *msg = stack;
  va_list again;
  int n;

  va_copy(again, ap);
  n = vsnprintf(stack, sizeof stack, fmt, ap);
  if (n < 0) {
    va_end(again);
    return;
  }
  if ((size_t)n >= sizeof stack) {
    char *big = (char *)malloc((size_t)n + 1);
    if (big != NULL) {
      vsnprintf(big, (size_t)n + 1, fmt, again);
      msg = big;
    }
  }
  va_end(again);
  if (dispatch)
    sg_dispatch(level, msg);
  else
    sg_ffi_log_write(level, msg);
  if (msg != stack)
    free(msg);
}

/* The initial value of o_log: filters by level and writes through Rust. */
void sg_ffi_default_log(int level, const char *fmt, ...)
{
  va_list ap;
  if (fmt == NULL || level > sg_ffi_log_threshold())
    return;
  va_start(ap, fmt);
  sg_vlog(level, 0, fmt, ap);
  va_end(ap);
}

#define SG_LEVEL_FN(name, level)                                \
  void sg_ffi_##name(const char *fmt, ...)                      \
  {                                                             \
    va_list ap;                                                 \
    if (fmt == NULL || (level) > sg_ffi_log_threshold())        \
      return;                                                   \
    va_start(ap, fmt);                                          \
    sg_vlog((level), 1, fmt, ap);                               \
    va_end(ap);                                                 \
  }

SG_LEVEL_FN(logerror, O_LOG_ERROR)
SG_LEVEL_FN(logwarn, O_LOG_WARN)
SG_LEVEL_FN(loginfo, O_LOG_INFO)
SG_LEVEL_FN(logdebug, O_LOG_DEBUG)
SG_LEVEL_FN(logdebug2, O_LOG_DEBUG2)
SG_LEVEL_FN(logdebug3, O_LOG_DEBUG3)
SG_LEVEL_FN(logdebug4, O_LOG_DEBUG4)

/* Called by Rust with an already formatted message. */
void sg_ffi_emit(int level, const char *msg)
{
  if (msg == NULL || level > sg_ffi_log_threshold())
    return;
  sg_dispatch(level, msg);
}
