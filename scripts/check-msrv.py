#!/usr/bin/env python3
"""Checks that the workspace's `rust-version` is true.

The compiler here is newer than the declared minimum and older toolchains
cannot be downloaded on this machine, so the check is made of the parts
that can be verified here:

- for each of our crates, every package its build needs (normal and build
  dependencies, transitively, as resolved in Cargo.lock) declares a
  `rust-version` at or below the crate's (a dependency needing a newer
  compiler would make the claim false);
- the installed toolchain is at least ours (or the build would not run);
- the standard-library APIs we call: clippy's `incompatible_msrv` lint
  (on by default, denied by `-D warnings` in scripts/test.sh) reads our
  `rust-version` and refuses any API stabilised after it; edition 2021
  has no language feature that needs a newer compiler than that lint knows.

Exit status 1 with what to change when a check fails.
"""
import json
import re
import subprocess
import sys


def version(text):
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3]) + (0,) * (3 - len(re.findall(r"\d+", text)[:3]))


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    members = set(meta["workspace_members"])
    packages = {p["id"]: p for p in meta["packages"]}
    # What building each package needs: normal and build dependencies
    # (dev-dependencies only build our tests).
    needs = {}
    for node in meta["resolve"]["nodes"]:
        needs[node["id"]] = [
            d["pkg"]
            for d in node["deps"]
            if any(k["kind"] in (None, "build") for k in d["dep_kinds"])
        ]
    failed = False
    highest_overall = (0, 0, 0)
    for member in sorted(members, key=lambda m: packages[m]["name"]):
        crate = packages[member]
        msrv = crate.get("rust_version")
        if not msrv:
            print(f"check-msrv: {crate['name']} declares no rust-version")
            failed = True
            continue
        seen, todo = set(), list(needs.get(member, []))
        while todo:
            pkg = todo.pop()
            if pkg in seen:
                continue
            seen.add(pkg)
            todo.extend(needs.get(pkg, []))
        for pkg in sorted(seen, key=lambda p: packages[p]["name"]):
            dep = packages[pkg]
            need = dep.get("rust_version")
            if need and version(need) > version(msrv):
                print(
                    f"check-msrv: {crate['name']} (rust-version {msrv}) depends on {dep['name']} {dep['version']}, "
                    f"which needs Rust {need}: raise rust-version or pin an older {dep['name']}"
                )
                failed = True
        highest_overall = max([highest_overall] + [version(msrv)])
    rustc = subprocess.run(["rustc", "--version"], check=True, capture_output=True, text=True).stdout
    if version(rustc.split()[1]) < highest_overall:
        print(f"check-msrv: the installed {rustc.strip()} is older than a rust-version we declare")
        failed = True
    if not failed:
        print(f"check-msrv: every crate's rust-version covers its dependencies; {rustc.strip()}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
