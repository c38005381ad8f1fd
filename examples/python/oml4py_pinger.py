#!/usr/bin/env python3
"""An unmodified OML4Py application: measures the time a local UDP echo takes
and reports it through OML4Py (PyPI oml4py 2.10.4) to an OML collection
server -- here `streamgauge server`.

usage: oml4py_pinger.py COLLECT_URI [COUNT]
       e.g. oml4py_pinger.py tcp:127.0.0.1:3003 20

Only loopback is used: a UDP echo socket is opened on 127.0.0.1 in this
process, so the script sends nothing anywhere else.
"""

import socket
import sys
import time

from oml4py import OMLBase


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    uri = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20

    echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    echo.bind(("127.0.0.1", 0))
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.settimeout(1.0)

    oml = OMLBase("pinger", "demo", socket.gethostname(), uri)
    oml.addmp("udp_echo", "seq:int32 rtt_us:double bytes:uint32 peer:string")
    oml.start()
    oml.inject_metadata("udp_echo", "unit", "microseconds", "rtt_us")
    for seq in range(count):
        payload = b"x" * (16 + seq)
        t0 = time.perf_counter()
        client.sendto(payload, echo.getsockname())
        data, addr = echo.recvfrom(2048)
        echo.sendto(data, addr)
        client.recvfrom(2048)
        rtt = (time.perf_counter() - t0) * 1e6
        oml.inject("udp_echo", [seq, rtt, len(payload), "127.0.0.1"])
    oml.close()
    print("pinger: reported %d round trips to %s" % (count, uri))


if __name__ == "__main__":
    main()
