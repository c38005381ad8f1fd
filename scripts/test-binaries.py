#!/usr/bin/env python3
"""Build the workspace's test binaries with cargo, then run them several at a
time (cargo test runs them one after the other).

    python3 scripts/test-binaries.py [--jobs N] [--timeout S] [CARGO ARGS...] [-- TEST ARGS...]

CARGO ARGS go to `cargo test --no-run` (default: --workspace --lib --bins
--tests); TEST ARGS go to every test binary (libtest's own options).

Why: measured on 2 cores, the 200 test binaries took 493 s one after the
other while using 266 s of CPU: most tests wait (on servers, timeouts,
PostgreSQL, child processes), and the one or two long tests of a binary
keep the next binary from starting. Each binary still runs as cargo runs
it (its own process, its tests on libtest's threads, the working directory
and CARGO_* variables cargo sets), so what a binary shares between its
tests (a PostgreSQL cluster, a lock serialising memory measurements) is
unchanged.

Every binary runs even when another failed (like --no-fail-fast). Each
binary's output is printed whole when it ends, so outputs never interleave.
Binaries start longest first, by the durations of the last run (kept in
target/test-binary-times.tsv). A binary running longer than --timeout is
killed, with its output so far. Exit status 1 if any binary failed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CARGO_ARGS = ["--workspace", "--lib", "--bins", "--tests"]


@dataclass
class Binary:
    name: str  # e.g. "server tests/memory_bounds"
    exe: str
    manifest_dir: str
    package: str
    version: str
    crate: str
    target: str


def parse_args() -> tuple[argparse.Namespace, list[str], list[str]]:
    argv = sys.argv[1:]
    test_args: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, test_args = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Other arguments are passed to `cargo test --no-run`.",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("TEST_JOBS", "2")),
        help="test binaries at once (default: $TEST_JOBS or 2)",
    )
    p.add_argument(
        "--alone",
        action="append",
        default=[],
        metavar="TARGET",
        help="a test target (e.g. inline_bench) to run with no other binary "
        "beside it, before the others: one whose checks compare throughput "
        "between phases, which another binary's load would skew (repeatable)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds after which a test binary is killed (default 900)",
    )
    opts, cargo_args = p.parse_known_args(argv)
    if opts.jobs < 1:
        p.error("--jobs must be at least 1")
    return opts, cargo_args or DEFAULT_CARGO_ARGS, test_args


def build(cargo_args: list[str]) -> tuple[list[Binary], Path]:
    """Runs `cargo test --no-run`; returns the test executables it made and
    the target directory."""
    cmd = [
        "cargo",
        "test",
        "--no-run",
        "--message-format=json-render-diagnostics",
        *cargo_args,
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    seen: dict[str, Binary] = {}
    target_dir = None
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            sys.stdout.write(line)
            continue
        if msg.get("reason") != "compiler-artifact":
            continue
        exe = msg.get("executable")
        if not exe or not msg["profile"]["test"]:
            continue
        manifest = Path(msg["manifest_path"])
        target = msg["target"]
        # package_id: "path+file:///…/crates/server#0.1.0" or "…#name@0.1.0"
        spec = msg["package_id"].rsplit("#", 1)[-1]
        package, _, version = spec.rpartition("@")
        if not package:
            package, version = manifest.parent.name, spec
        kind = target["kind"][0]
        label = target["name"] if kind in ("lib", "bin") else f"{kind}s/{target['name']}"
        seen[exe] = Binary(
            name=f"{package} {label}" if kind != "lib" else f"{package} (lib)",
            exe=exe,
            manifest_dir=str(manifest.parent),
            package=package,
            version=version,
            crate=target["name"].replace("-", "_"),
            target=target["name"],
        )
        # <target>/debug/deps/<exe>
        target_dir = Path(exe).parent.parent.parent
    if proc.wait() != 0:
        sys.exit(f"error: `{' '.join(cmd)}` failed (exit {proc.returncode})")
    if target_dir is None:
        sys.exit("error: cargo built no test binaries")
    return list(seen.values()), target_dir


def load_times(path: Path) -> dict[str, float]:
    times: dict[str, float] = {}
    try:
        for line in path.read_text().splitlines():
            secs, _, name = line.partition("\t")
            times[name] = float(secs)
    except (OSError, ValueError):
        pass
    return times


class Runner:
    def __init__(self, binaries: list[Binary], opts, test_args: list[str], profile_dir: Path):
        self.queue = list(binaries)
        self.opts = opts
        self.test_args = test_args
        self.profile_dir = profile_dir
        self.lock = threading.Lock()
        self.done = 0
        self.total = len(binaries)
        self.failed: list[tuple[Binary, str]] = []
        self.times: dict[str, float] = {}
        self.children: set[subprocess.Popen] = set()

    def env(self, b: Binary) -> dict[str, str]:
        env = dict(os.environ)
        # libtest's --report-time is unstable; the stable harness accepts
        # it with RUSTC_BOOTSTRAP=1, set here for the test binaries only
        # (for cargo it would rerun build scripts and rebuild).
        env["RUSTC_BOOTSTRAP"] = "1"
        env["CARGO_MANIFEST_DIR"] = b.manifest_dir
        env["CARGO_PKG_NAME"] = b.package
        env["CARGO_PKG_VERSION"] = b.version
        env["CARGO_CRATE_NAME"] = b.crate
        libs = [str(self.profile_dir / "deps"), str(self.profile_dir)]
        if env.get("LD_LIBRARY_PATH"):
            libs.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = ":".join(libs)
        return env

    def run_one(self, b: Binary) -> None:
        with tempfile.TemporaryFile() as out:
            start = time.monotonic()
            child = subprocess.Popen(
                [b.exe, *self.test_args],
                cwd=b.manifest_dir,
                env=self.env(b),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            with self.lock:
                self.children.add(child)
            try:
                status = child.wait(timeout=self.opts.timeout)
                why = None if status == 0 else f"exit {status}"
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
                why = f"killed after {self.opts.timeout:.0f} s (--timeout)"
            secs = time.monotonic() - start
            with self.lock:
                self.children.discard(child)
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        with self.lock:
            self.done += 1
            self.times[b.name] = secs
            verdict = "ok" if why is None else f"FAILED ({why})"
            print(f"\n──── [{self.done}/{self.total}] {b.name}: {verdict}, {secs:.1f} s ────")
            print(text, end="" if text.endswith("\n") or not text else "\n")
            if why is not None:
                self.failed.append((b, why))
            sys.stdout.flush()

    def worker(self) -> None:
        while True:
            with self.lock:
                if not self.queue:
                    return
                b = self.queue.pop(0)
            self.run_one(b)

    def kill_all(self) -> None:
        with self.lock:
            for c in self.children:
                try:
                    os.killpg(c.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def main() -> int:
    opts, cargo_args, test_args = parse_args()
    binaries, target_dir = build(cargo_args)
    times_file = target_dir / "test-binary-times.tsv"
    previous = load_times(times_file)
    # Longest first (unknown ones first of all: they may be long).
    binaries.sort(key=lambda b: -previous.get(b.name, float("inf")))
    unknown = set(opts.alone) - {b.target for b in binaries}
    if unknown:
        sys.exit(f"error: --alone {', '.join(sorted(unknown))}: no such test target was built")
    alone = [b for b in binaries if b.target in opts.alone]
    profile_dir = Path(binaries[0].exe).parent.parent
    runner = Runner([b for b in binaries if b not in alone], opts, test_args, profile_dir)
    runner.total = len(binaries)
    print(
        f"running {len(binaries)} test binaries: {len(alone)} alone, then {opts.jobs} at a time",
        flush=True,
    )
    start = time.monotonic()
    for b in alone:
        runner.run_one(b)
    threads = [threading.Thread(target=runner.worker, daemon=True) for _ in range(opts.jobs)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.5)
    except KeyboardInterrupt:
        runner.kill_all()
        print("\ninterrupted: test binaries killed", file=sys.stderr)
        return 130
    elapsed = time.monotonic() - start
    merged = {**previous, **runner.times}
    times_file.write_text("".join(f"{s:.1f}\t{n}\n" for n, s in sorted(merged.items())))
    print(f"\n{len(binaries)} test binaries in {elapsed:.0f} s ({opts.jobs} at a time)")
    if runner.failed:
        print(f"{len(runner.failed)} failed:")
        for b, why in runner.failed:
            print(f"  {b.name}: {why}\n    {b.exe}  (run in {b.manifest_dir})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
