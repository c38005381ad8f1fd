#!/usr/bin/python3
"""Regenerates the link-type capture vectors of this folder (run as root).

Real traffic inside network namespaces this script creates and deletes,
captured by tcpdump itself:
  ether.pcap  tcpdump -i va            (veth, LINKTYPE 1)
  sll.pcap    tcpdump -i any -y LINUX_SLL (LINKTYPE 113)
  sll2.pcap   tcpdump -i any           (LINKTYPE 276)
  raw.pcap    tcpdump -i tun0          (tun device, LINKTYPE 101)
The raw captures' IP datagrams are then framed with scapy for the link
types no Linux interface gives here:
  null.pcap (0, family in host and network order), loop.pcap (108),
  ipv4.pcap (228), ipv6.pcap (229), wifi.pcap (105, data frames through
  LLC/SNAP in every address form, plus management and control frames),
  radiotap.pcap (127, the same behind radiotap headers of varying length,
  and data frames again with the data-pad flag and a padded MAC header),
and pcapng copies (editcap) of sll2 and radiotap. raw12.pcap and raw14.pcap
are raw.pcap with the DLT numbers 12 and 14 in the header. The traffic
touches only the namespaces' own addresses.

Usage: sudo python3 make.py   (needs ip, tcpdump, editcap, python3-scapy)
       sudo python3 make.py --frame-only   (re-frames raw.pcap only)
Timestamps and ports differ from run to run; the tests compare with tcpdump
and tshark on whatever the vectors hold.
"""
import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PID = os.getpid()
NA, NB = f"sgltA{PID}", f"sgltB{PID}"


def sh(*args, check=True):
    return subprocess.run(args, check=check)


LIBC = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def netns_enter(name):
    """Moves the calling thread into namespace `name`."""
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    assert LIBC.setns(fd, CLONE_NEWNET) == 0, ctypes.get_errno()
    os.close(fd)


def tcpdump(ns, iface, out, extra=()):
    p = subprocess.Popen(
        ["ip", "netns", "exec", ns, "tcpdump", "-Z", "root", "--immediate-mode", "-U", "-n", "-s", "262144", "-i", iface,
         *extra, "-w", out],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # Wait until tcpdump listens.
    for line in p.stderr:
        if "listening" in line:
            return p
    p.kill()
    raise RuntimeError(f"tcpdump on {iface} did not start")


def stop(p):
    time.sleep(0.3)
    p.terminate()
    p.stderr.read()
    p.wait()


TUNSETIFF = 0x400454CA
IFF_TUN, IFF_NO_PI = 0x0001, 0x1000


def tun_mirror(stop_at):
    """Attaches to tun0 and writes every datagram back with its addresses
    swapped (checksums stay valid): the tun device sees traffic both ways."""
    netns_enter(NA)
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", b"tun0", IFF_TUN | IFF_NO_PI))
    os.set_blocking(fd, False)
    mirrored = 0
    while time.time() < stop_at:
        try:
            pkt = bytearray(os.read(fd, 65536))
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if mirrored >= 40:
            continue
        v = pkt[0] >> 4
        if v == 4:
            pkt[12:16], pkt[16:20] = pkt[16:20], pkt[12:16]
        elif v == 6:
            pkt[8:24], pkt[24:40] = pkt[24:40], pkt[8:24]
        else:
            continue
        os.write(fd, bytes(pkt))
        mirrored += 1


def traffic(ns, v4_peer, v6_peer, big=True):
    """Pings, UDP (DNS-like, a high port, fragments) and a TCP exchange."""
    def run():
        netns_enter(ns)
        for dst, fam in ((v4_peer, socket.AF_INET), (v6_peer, socket.AF_INET6)):
            u = socket.socket(fam, socket.SOCK_DGRAM)
            for port, data in ((53, b"\x12\x34\x01\x00\x00\x01" + b"\0" * 6 + b"\x03www\x00\x00\x01\x00\x01"),
                               (9999, b"hello"), (5353, b"x" * 40)):
                u.sendto(data, (dst, port))
            if big:
                u.sendto(b"F" * 3000, (dst, 7777))
            u.close()
            try:
                t = socket.create_connection((dst, 8080), timeout=0.5)
                t.sendall(b"GET / HTTP/1.0\r\n\r\n")
                t.close()
            except OSError:
                pass
    th = threading.Thread(target=run)
    th.start()
    th.join()
    sh("ip", "netns", "exec", ns, "ping", "-c", "2", "-i", "0.2", "-W", "1", v4_peer, check=False)
    sh("ip", "netns", "exec", ns, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "1", v6_peer, check=False)


def listeners(ns, addrs):
    """A TCP listener on port 8080 of each address (answers, then closes)."""
    def run(addr, fam):
        netns_enter(ns)
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, 8080))
        s.listen()
        s.settimeout(3)
        try:
            c, _ = s.accept()
            c.recv(100)
            c.sendall(b"HTTP/1.0 200 OK\r\n\r\nok")
            c.close()
        except OSError:
            pass
        s.close()
    ts = [threading.Thread(target=run, args=a, daemon=True) for a in addrs]
    for t in ts:
        t.start()
    time.sleep(0.2)
    return ts


def main():
    os.chdir(HERE)
    sh("ip", "netns", "add", NA)
    sh("ip", "netns", "add", NB)
    try:
        for ns in (NA, NB):
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", NA, "link", "add", "va", "mtu", "1400", "type", "veth", "peer",
           "name", "vb", "mtu", "1400", "netns", NB)
        sh("ip", "-n", NA, "addr", "add", "10.77.0.1/24", "dev", "va")
        sh("ip", "-n", NB, "addr", "add", "10.77.0.2/24", "dev", "vb")
        sh("ip", "-n", NA, "addr", "add", "fd77::1/64", "dev", "va", "nodad")
        sh("ip", "-n", NB, "addr", "add", "fd77::2/64", "dev", "vb", "nodad")
        sh("ip", "-n", NA, "link", "set", "va", "up")
        sh("ip", "-n", NB, "link", "set", "vb", "up")
        # Ethernet, SLL and SLL2 from the same kind of traffic.
        for out, iface, extra in (("ether.pcap", "va", ()), ("sll.pcap", "any", ("-y", "LINUX_SLL")),
                                  ("sll2.pcap", "any", ())):
            ls = listeners(NB, (("10.77.0.2", socket.AF_INET), ("fd77::2", socket.AF_INET6)))
            p = tcpdump(NA, iface, out, extra)
            traffic(NA, "10.77.0.2", "fd77::2")
            stop(p)
            for t in ls:
                t.join()
        # A tun device: raw IP.
        sh("ip", "-n", NA, "tuntap", "add", "dev", "tun0", "mode", "tun")
        sh("ip", "-n", NA, "link", "set", "tun0", "mtu", "1400")
        sh("ip", "-n", NA, "addr", "add", "10.88.0.1/24", "dev", "tun0")
        sh("ip", "-n", NA, "addr", "add", "fd88::1/64", "dev", "tun0", "nodad")
        holder = threading.Thread(target=tun_mirror, args=(time.time() + 6,))
        holder.start()
        time.sleep(0.3)
        sh("ip", "-n", NA, "link", "set", "tun0", "up")
        p = tcpdump(NA, "tun0", "raw.pcap")
        traffic(NA, "10.88.0.2", "fd88::2")
        stop(p)
        holder.join()
    finally:
        sh("ip", "netns", "del", NA, check=False)
        sh("ip", "netns", "del", NB, check=False)
    frame_others()
    for name in ("sll2", "radiotap"):
        sh("editcap", "-F", "pcapng", f"{name}.pcap", f"{name}.pcapng")
    raw = open("raw.pcap", "rb").read()
    for dlt in (12, 14):
        open(f"raw{dlt}.pcap", "wb").write(raw[:20] + struct.pack("<I", dlt) + raw[24:])


def frame_others():
    from scapy.all import (Dot11, Dot11Beacon, Dot11Elt, Dot11QoS, LLC, SNAP,
                           RadioTap, rdpcap, wrpcap, Raw)
    pkts = rdpcap("raw.pcap")
    ips = [(p.time, bytes(p)) for p in pkts]
    v4 = [(t, b) for t, b in ips if b[0] >> 4 == 4]
    v6 = [(t, b) for t, b in ips if b[0] >> 4 == 6]

    def write(name, linktype, frames):
        # Plain pcap writer: scapy's would pick a layer-derived link type.
        with open(name, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, linktype))
            for t, b in frames:
                sec = int(t)
                usec = int(round((float(t) - sec) * 1e6))
                f.write(struct.pack("<IIII", sec, usec, len(b), len(b)) + b)

    # NULL: host (little-endian) order mostly, a few in network order; IPv6
    # as Linux (10), FreeBSD (28) and the BSD value libpcap matches (24).
    null = []
    for i, (t, b) in enumerate(ips):
        fam = 2 if b[0] >> 4 == 4 else (24, 28, 10)[i % 3]
        order = ">I" if i % 5 == 4 else "<I"
        null.append((t, struct.pack(order, fam) + b))
    write("null.pcap", 0, null)
    write("loop.pcap", 108, [(t, struct.pack(">I", 2 if b[0] >> 4 == 4 else 24) + b) for t, b in ips])
    write("ipv4.pcap", 228, v4)
    write("ipv6.pcap", 229, v6)

    sta, ap, ds, wds = "02:00:00:00:00:01", "02:00:00:00:00:aa", "02:00:00:00:00:02", "02:00:00:00:00:03"
    wifi = []
    machdr = {}  # index in wifi -> MAC header length of the data frames
    for i, (t, b) in enumerate(ips):
        et = 0x0800 if b[0] >> 4 == 4 else 0x86dd
        form = i % 4
        if form == 0:    # to the AP
            hdr = Dot11(type=2, subtype=0, FCfield="to-DS", addr1=ap, addr2=sta, addr3=ds)
        elif form == 1:  # from the AP, QoS data
            hdr = Dot11(type=2, subtype=8, FCfield="from-DS", addr1=sta, addr2=ap, addr3=ds) / Dot11QoS(TID=5)
        elif form == 2:  # WDS: four addresses
            hdr = Dot11(type=2, subtype=0, FCfield="to-DS+from-DS", addr1=ap, addr2=wds, addr3=ds, addr4=sta)
        else:            # WDS QoS
            hdr = Dot11(type=2, subtype=8, FCfield="to-DS+from-DS", addr1=ap, addr2=wds, addr3=ds,
                        addr4=sta) / Dot11QoS(TID=1)
        f = hdr / LLC(dsap=0xaa, ssap=0xaa, ctrl=3) / SNAP(OUI=0, code=et) / Raw(b)
        machdr[len(wifi)] = len(bytes(hdr))
        wifi.append((t, bytes(f)))
        if i % 7 == 0:
            beacon = Dot11(type=0, subtype=8, addr1="ff:ff:ff:ff:ff:ff", addr2=ap, addr3=ap) / \
                Dot11Beacon() / Dot11Elt(ID="SSID", info=b"sg")
            wifi.append((t, bytes(beacon)))
            wifi.append((t, bytes(Dot11(type=1, subtype=13, addr1=sta))))
        if i % 9 == 0:
            # Null function (no body) and a protected frame (body encrypted).
            wifi.append((t, bytes(Dot11(type=2, subtype=4, FCfield="to-DS", addr1=ap, addr2=sta, addr3=ap))))
            wifi.append((t, bytes(Dot11(type=2, subtype=0, FCfield="to-DS+protected", addr1=ap, addr2=sta,
                                        addr3=ds) / Raw(b"\x01\x02\x03\x04\x05\x06\x07\x08" + b[:40]))))
    write("wifi.pcap", 105, wifi)
    radio = []
    for i, (t, f) in enumerate(wifi):
        rt = RadioTap(present="Flags+Rate+Channel+dBm_AntSignal", Flags=0, Rate=12,
                      ChannelFrequency=2437, ChannelFlags="2GHz+OFDM", dBm_AntSignal=-40 - i % 30) \
            if i % 2 else RadioTap(present="Rate", Rate=2)
        radio.append((t, bytes(rt) + f))
        n = machdr.get(i, 0)
        if n % 4:
            # The same frame as a driver with the data-pad flag gives it:
            # the MAC header padded to 32 bits.
            pad = RadioTap(present="TSFT+Flags+Rate", mac_timestamp=1000 + i, Flags="pad", Rate=2)
            radio.append((t, bytes(pad) + f[:n] + bytes(-n % 4) + f[n:]))
    write("radiotap.pcap", 127, radio)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root: it creates network namespaces")
    if len(sys.argv) > 1 and sys.argv[1] == "--frame-only":
        os.chdir(HERE)
        frame_others()
    else:
        main()
