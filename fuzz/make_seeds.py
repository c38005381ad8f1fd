#!/usr/bin/env python3
"""Regenerates fuzz/seeds/ from the reference captures in shared/vectors.

Usage: python3 fuzz/make_seeds.py [VECTORS_DIR]   (default: ../shared/vectors
relative to the repository root, else /work/shared/vectors)

Text/binary seeds are `[header selector, chunking control] + body`: selector 0
is the ref-alltypes header and 1 the ref-onemp header (see fuzz/src/lib.rs).
Files named regress-* are inputs that crashed before a fix, kept by hand.
"""
import os
import random
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
cands = sys.argv[1:] + [os.path.join(root, "..", "shared", "vectors"), "/work/shared/vectors"]
vec = next(p for p in cands if os.path.isdir(p))
out = os.path.join(here, "seeds")


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def split(name):
    b = open(os.path.join(vec, name), "rb").read()
    i = b.index(b"\n\n") + 2
    return b[:i], b[i:]


SEL = {"ref-alltypes": 0, "ref-onemp": 1}
for stem, sel in SEL.items():
    for ext, target in (("txt", "text"), ("bin", "binary")):
        head, body = split(f"{stem}.{ext}")
        put("header", f"{stem}-{ext}", head)
        put("header", f"{stem}-{ext}-with-body", head + body[:64])
        # Whole body, fed in big chunks (ctl 0x3f) and one byte at a time (0).
        put(target, f"{stem}-whole", bytes([sel, 0x3F]) + body)
        put(target, f"{stem}-bytewise", bytes([sel, 0x00]) + body)
        if ext == "txt":
            for k, line in enumerate(body.split(b"\n")[:8]):
                if line:
                    put(target, f"{stem}-line{k}", bytes([sel, 0x07]) + line + b"\n")
        else:
            # Individual frames (split on sync; good enough for seeds).
            frames = [b"\xaa\xaa" + f for f in body.split(b"\xaa\xaa") if f]
            for k, fr in enumerate(frames[:8]):
                put(target, f"{stem}-frame{k}", bytes([sel, 0x07]) + fr)

put("header", "old-crlf", b"protocol: 3\r\nexperiment-id :  old \r\nstart_time: 10\r\nx-auth: tok\r\n\r\n")
put("header", "bad-schema", b"protocol: 5\nschema: 1 a x:int\n\n")
# Selector 3 is the bare header: a late declaration through schema 0.
put("text", "declare", bytes([3, 0x05]) + b"0.1\t0\t1\t.\tschema\t9 late a:int32 b:[double] c:blob\n0.2\t9\t1\t-5\t2 1.5 nan\t3q0=\n")
put("text", "errors", bytes([0, 0x02]) + b"x\t2\t1\n1\t99\t1\n1\t3\t1\t2 1\n1\t3\t1\t0\r\n\n1\t2\t1\ttoo\tfew\n")

rng = random.Random(7)
for k in range(6):
    put("roundtrip", f"random{k}", bytes(rng.randrange(256) for _ in range(64 << k)))
