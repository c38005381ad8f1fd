//! The starting points `--main` and `--make` write once for the user to
//! edit: `<app>.c` (a `main` that initialises OML, parses the options,
//! registers the measurement points, records the application's metadata
//! and injects example values into every point), `config.h` (the
//! autoconf-style `PACKAGE_*` macros it uses) and a `Makefile`.

use std::fmt::Write as _;

use super::c::banner;
use super::{c_string, Options};
use crate::model::{App, Metric, MetricType};

/// Example arguments for a metric in the generated run loop (`i` counts
/// iterations); vectors and blobs refer to arrays declared before the loop.
fn example(m: &Metric, t: MetricType) -> String {
    let n = &m.name.value;
    match t {
        MetricType::Int32 => "(int32_t)-i".into(),
        MetricType::UInt32 => "(uint32_t)i".into(),
        MetricType::Int64 => "(int64_t)-i * 1000000007".into(),
        MetricType::UInt64 => "(uint64_t)i * 1000000007u".into(),
        MetricType::Double => "1.0 / (double)i".into(),
        MetricType::String => "\"example\"".into(),
        MetricType::Blob => format!("{n}_example, sizeof {n}_example"),
        MetricType::Guid => "(oml_guid_t)i".into(),
        MetricType::Boolean => "(uint8_t)(i % 2)".into(),
        MetricType::Long => "(long)i".into(),
        _ => format!("{n}_example, sizeof {n}_example / sizeof {n}_example[0]"),
    }
}

/// The static example array a blob or vector metric is injected from.
fn example_array(m: &Metric, t: MetricType) -> Option<String> {
    let n = &m.name.value;
    let (ty, items) = match t {
        MetricType::Blob => ("unsigned char", "0x4f, 0x4d, 0x4c, 0x00, 0xff"),
        MetricType::VecDouble => ("double", "0.0, 2.5, -1.25, 1e300"),
        MetricType::VecInt32 => ("int32_t", "0, -1, INT32_MIN, INT32_MAX"),
        MetricType::VecUInt32 => ("uint32_t", "0, 1, UINT32_MAX"),
        MetricType::VecInt64 => ("int64_t", "0, -1, INT64_MIN, INT64_MAX"),
        MetricType::VecUInt64 => ("uint64_t", "0, 1, UINT64_MAX"),
        MetricType::VecBool => ("bool", "true, false, true"),
        _ => return None,
    };
    Some(format!(
        "  static const {ty} {n}_example[] = {{ {items} }};\n"
    ))
}

/// `<app>.c`.
pub fn main_c(app: &App, opts: &Options) -> String {
    let name = &app.name.value;
    let cname = app.c_name();
    let var = |wanted: &str, numeric: bool| {
        app.properties.iter().find(|p| {
            let t = p.ty.decl.resolve(opts.int_alias);
            p.var_name.value == wanted
                && if numeric {
                    matches!(
                        t,
                        MetricType::Double
                            | MetricType::Int32
                            | MetricType::UInt32
                            | MetricType::Long
                    )
                } else {
                    t == MetricType::Boolean
                }
        })
    };
    // The skeleton's `--loop` flag is stored in `repeat` (`loop` is a Rust keyword).
    let repeat = var("loop", false)
        .or_else(|| var("repeat", false))
        .map_or_else(
            || "0".to_owned(),
            |p| format!("g_opts->{}", p.var_name.value),
        );
    let delay = if var("delay", true).is_some() {
        "(double)g_opts->delay"
    } else {
        "1.0"
    };
    let mut arrays = String::new();
    let mut injects = String::new();
    for mp in &app.measurements {
        let mut args = String::new();
        for m in &mp.metrics {
            let t = m.ty.decl.resolve(opts.int_alias);
            arrays.push_str(&example_array(m, t).unwrap_or_default());
            let _ = write!(args, ", {}", example(m, t));
        }
        let mpn = &mp.name.value;
        let _ = write!(
            injects,
            "    if (oml_inject_{mpn}(oml_mps->{mpn}{args}) != 0) {{\n      logwarn(\"could not inject into measurement point {mpn}\\n\");\n    }}\n"
        );
    }
    let mut s = banner(
        app,
        &format!("{name}.c"),
        "A starting point: edit it; scaffold will not overwrite it without --force.",
    );
    let _ = write!(
        s,
        r#"
#define _GNU_SOURCE /* nanosleep */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <popt.h>
#include <oml2/omlc.h>

#define USE_OPTS /* this file holds the option table */
#include "{name}_popt.h"

#define OML_FROM_MAIN /* this file holds the measurement point storage */
#include "{name}_oml.h"

#include "config.h"

static volatile sig_atomic_t running = 1;

static void
on_signal(int signum)
{{
  (void)signum;
  running = 0;
}}

/* The application's work: replace the example values with real ones. */
static void
run(opts_t *opts, oml_mps_t *oml_mps)
{{
  long i = 1;
{arrays}
  (void)opts;
  do {{
{injects}
    i++;
    if ({repeat}) {{
      double delay = {delay};
      struct timespec ts;
      ts.tv_sec = (time_t)delay;
      ts.tv_nsec = (long)((delay - (double)ts.tv_sec) * 1e9);
      nanosleep(&ts, NULL);
    }}
  }} while ({repeat} && running);
}}

int
main(int argc, const char *argv[])
{{
  char cmdline[4096] = "";
  size_t used = 0;
  int i, c;
  struct sigaction sa;

  /* Keep the command line for the metadata, before OML strips --oml-*. */
  for (i = 0; i < argc && used < sizeof cmdline - 1; i++) {{
    int n = snprintf(cmdline + used, sizeof cmdline - used, "%s%s", i ? " " : "", argv[i]);
    if (n < 0) {{
      break;
    }}
    used += (size_t)n;
  }}

  if (omlc_init({app_lit}, &argc, argv, NULL) < 0) {{
    logerror("could not initialise OML\n");
    return 1;
  }}

  poptContext ctx = poptGetContext(NULL, argc, argv, options, 0);
  while ((c = poptGetNextOpt(ctx)) > 0) {{
  }}
  if (c < -1) {{
    fprintf(stderr, "%s: %s\n", poptBadOption(ctx, POPT_BADOPTION_NOALIAS), poptStrerror(c));
    return 1;
  }}

  oml_register_mps();
  if (omlc_start() != 0) {{
    logerror("could not start OML\n");
    return 1;
  }}

  OmlValueU v;
  omlc_zero(v);
  omlc_set_string(v, PACKAGE_NAME);
  omlc_inject_metadata(NULL, "appname", &v, OML_STRING_VALUE, NULL);
  omlc_set_string(v, PACKAGE_VERSION);
  omlc_inject_metadata(NULL, "version", &v, OML_STRING_VALUE, NULL);
  omlc_set_string(v, cmdline);
  omlc_inject_metadata(NULL, "cmdline", &v, OML_STRING_VALUE, NULL);
  omlc_reset_string(v);

  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  run(g_opts, g_oml_mps_{cname});

  poptFreeContext(ctx);
  omlc_close();
  return 0;
}}
"#,
        app_lit = c_string(name),
    );
    s
}

/// `config.h`.
pub fn config_h(app: &App) -> String {
    let mut s = banner(
        app,
        "config.h",
        "Package name and version for the generated main.",
    );
    let _ = write!(
        s,
        "\n#define PACKAGE {}\n#define VERSION {}\n\n/* The names an autoconf-generated config.h has. */\n\
         #define PACKAGE_NAME PACKAGE\n#define PACKAGE_TARNAME PACKAGE\n#define PACKAGE_TAR_NAME PACKAGE\n\
         #define PACKAGE_VERSION VERSION\n#define PACKAGE_STRING PACKAGE_NAME \" \" PACKAGE_VERSION\n",
        c_string(&app.name.value),
        c_string(&app.version_string())
    );
    s
}

/// `Makefile`.
pub fn makefile(app: &App) -> String {
    let name = &app.name.value;
    let bindir = app
        .path
        .as_deref()
        .and_then(|p| p.rsplit_once('/').map(|(dir, _)| dir.to_owned()))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/usr/local/bin".to_owned());
    format!(
        "# Makefile for {name} {version}, generated by streamgauge scaffold; edit freely\n\
         # (scaffold does not overwrite it without --force).\n\
         PROGRAM = {name}\nSRCS = $(PROGRAM).c\nOBJS = $(SRCS:%.c=%.o)\n\n\
         RUNARGS = --oml-collect file:-\nBINDIR = $(DESTDIR){bindir}/\n\n\
         CFLAGS = -Wall -Werror -g -I.\nLDFLAGS =\nLIBS = -loml2 -locomm -lpopt\n\
         SCAFFOLD = streamgauge scaffold\n# The description (APP.rb, or its TOML form APP.toml).\nDESCRIPTION = $(PROGRAM).rb\n\n\
         all: build\nbuild: $(PROGRAM)\n\n\
         $(PROGRAM): $(OBJS)\n\t$(CC) -o $@ $^ $(LDFLAGS) $(LIBS)\n\n\
         %.o: %.c\n\t$(CC) -c $(CFLAGS) $< -o $@\n\n\
         $(PROGRAM).o: config.h $(PROGRAM)_popt.h $(PROGRAM)_oml.h\n\
         $(PROGRAM)_popt.h: $(DESCRIPTION)\n\t$(SCAFFOLD) --opts $<\n\
         $(PROGRAM)_oml.h: $(DESCRIPTION)\n\t$(SCAFFOLD) --oml $<\n\n\
         install: $(PROGRAM)\n\tinstall -m 755 $(PROGRAM) $(BINDIR)\n\n\
         run: $(PROGRAM)\n\t./$(PROGRAM) $(RUNARGS)\n\n\
         clean:\n\trm -f $(PROGRAM) $(OBJS)\n\n\
         realclean: clean\n\trm -f $(PROGRAM)_popt.h $(PROGRAM)_oml.h\n\n\
         .PHONY: all build install run clean realclean\n",
        version = app.version_string()
    )
}
