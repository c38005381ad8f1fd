"""Cost of one inject from Python: streamgauge's native client against the
pure-Python oml4py (PyPI), in the same run, same machine, same schema.

    python3 python/bench/inject.py [N]

Both clients send to a local sink that reads and discards (oml4py needs a
TCP peer; streamgauge sends binary OMSP to the same kind of sink from its
writer thread). Prints µs per tuple for each and the ratio.
"""

from __future__ import annotations

import socket
import sys
import threading
import time


def sink() -> int:
    """A TCP server on 127.0.0.1 that drains every connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def drain(c):
        while c.recv(1 << 20):
            pass

    def accept():
        while True:
            c, _ = srv.accept()
            threading.Thread(target=drain, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return srv.getsockname()[1]


def bench_streamgauge(port: int, n: int) -> tuple[float, dict]:
    import streamgauge

    c = streamgauge.Client("bench", domain="bench", sender="py", collect=f"tcp://127.0.0.1:{port}",
                           argv=["bench", "--oml-instr-interval", "0"])
    mp = c.mp("m", {"seq": "int32", "rtt": "double", "host": "string"})
    c.start()
    inject = mp.inject
    row = (1, 0.5, "10.0.0.1")
    for _ in range(10_000):  # warm-up
        inject(row)
    t0 = time.perf_counter()
    for i in range(n):
        inject((i, 0.5, "10.0.0.1"))
    dt = time.perf_counter() - t0
    c.close()
    return dt / n * 1e6, c.stats()


def bench_oml4py(port: int, n: int) -> float:
    import io
    import contextlib

    from oml4py import OMLBase

    with contextlib.redirect_stderr(io.StringIO()):
        o = OMLBase("bench", "bench", "pyref", f"tcp:127.0.0.1:{port}")
        o.addmp("m", "seq:int32 rtt:double host:string")
        o.start()
    inject = o.inject
    t0 = time.perf_counter()
    for i in range(n):
        inject("m", [i, 0.5, "10.0.0.1"])
    dt = time.perf_counter() - t0
    o.close()
    return dt / n * 1e6


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    port = sink()
    ours, stats = bench_streamgauge(port, n)
    # The loop itself (tuple building, iteration), for reference.
    t0 = time.perf_counter()
    for i in range(n):
        (i, 0.5, "10.0.0.1")
    loop = (time.perf_counter() - t0) / n * 1e6
    ref = bench_oml4py(port, max(n // 10, 1000))
    dropped = stats.get("dropped_at_inject", 0) + sum(d["dropped"] for d in stats.get("destinations", []))
    print(f"tuples: {n} (oml4py: {max(n // 10, 1000)})")
    print(f"streamgauge (native, binary): {ours:.3f} us/tuple (loop overhead alone {loop:.3f} us); dropped {dropped}")
    print(f"oml4py 2.10.4 (pure Python, text): {ref:.3f} us/tuple")
    print(f"ratio oml4py / streamgauge: {ref / ours:.1f}x")
    # A fast inject that loses tuples is not a result: any drop fails the
    # benchmark (the sink reads as fast as loopback allows).
    if dropped:
        print(f"FAILED: {dropped} tuples dropped", file=sys.stderr)
        return 1
    return 0 if ours <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
