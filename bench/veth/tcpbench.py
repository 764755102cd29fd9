#!/usr/bin/env python3
"""TCP round-trip time and throughput across the braid0/braid1 veth link.

Standard library only (no iperf3 or ping needed). Starts a server in the
second namespace (`ip netns exec NS1 python3 tcpbench.py --serve IP`) and runs
the client in the first:
  rtt         median of 200 one-byte TCP ping-pongs (TCP_NODELAY);
  throughput  a bulk send for about --seconds seconds, each direction
              separately, then both directions at once (as a 2-rank ring
              all_reduce uses the link); the receiver acknowledges the last
              byte, so the time covers delivery, not the socket buffer.
usage: tcpbench.py [--ns0 braid0 --ns1 braid1 --ip0 10.77.0.1 --ip1 10.77.0.2]
                   [--rate MBIT] [--seconds 2] [--json]
"""
import argparse
import json
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

PORT = 47719
CHUNK = 1 << 16


def recv_exact(sock, n):
    data = bytearray()
    while len(data) < n:
        part = sock.recv(n - len(data))
        if not part:
            raise ConnectionError("peer closed")
        data += part
    return bytes(data)


def sink(sock, total):
    left = total
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    while left > 0:
        n = sock.recv_into(view, min(CHUNK, left))
        if not n:
            raise ConnectionError("peer closed")
        left -= n


def source(sock, total):
    block = b"\0" * CHUNK
    left = total
    while left > 0:
        n = min(CHUNK, left)
        sock.sendall(block[:n])
        left -= n


def both(sock, total):
    """Sends and receives `total` bytes at once, then exchanges an ack."""
    sender = threading.Thread(target=source, args=(sock, total))
    sender.start()
    sink(sock, total)
    sender.join()
    sock.sendall(b"k")
    recv_exact(sock, 1)


def serve(ip):
    """One client session: commands 'P' (ping-pong count), 'R' (receive
    bytes, then ack), 'S' (send bytes, then wait for ack), 'Q'."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((ip, PORT))
    listener.listen(1)
    print("ready", flush=True)
    listener.settimeout(30)
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while True:
        op, arg = struct.unpack("!cQ", recv_exact(conn, 9))
        if op == b"P":
            for _ in range(arg):
                conn.sendall(recv_exact(conn, 1))
        elif op == b"R":
            sink(conn, arg)
            conn.sendall(b"k")
        elif op == b"S":
            source(conn, arg)
            recv_exact(conn, 1)
        elif op == b"B":
            both(conn, arg)
        else:
            break
    conn.close()


def client(args):
    server = subprocess.Popen(
        ["ip", "netns", "exec", args.ns1, sys.executable, __file__,
         "--serve", args.ip1], stdout=subprocess.PIPE, text=True)
    try:
        if server.stdout.readline().strip() != "ready":
            sys.exit("tcpbench: the server did not start")
        # The client runs in ns0: re-exec there unless we already are.
        result = subprocess.run(
            ["ip", "netns", "exec", args.ns0, sys.executable, __file__,
             "--connect", args.ip1, "--rate", str(args.rate or 0),
             "--seconds", str(args.seconds)],
            capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            sys.exit("tcpbench: client failed:\n" + result.stderr)
        measured = json.loads(result.stdout)
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
    if args.json:
        print(json.dumps(measured))
        return
    line = (f"tcpbench: {args.ns0} -> {args.ip1}: TCP rtt median "
            f"{measured['rtt_us']:.0f} us (min {measured['rtt_min_us']:.0f}); "
            f"throughput 0->1 {measured['mbit_01']:.1f} Mbit/s, "
            f"1->0 {measured['mbit_10']:.1f} Mbit/s, both at once "
            f"{measured['mbit_both']:.1f} Mbit/s each")
    if args.rate:
        line += (f" ({measured['mbit_01'] / args.rate:.0%}, "
                 f"{measured['mbit_10'] / args.rate:.0%} and "
                 f"{measured['mbit_both'] / args.rate:.0%} of {args.rate:g})")
    print(line)


def connect(args):
    sock = socket.create_connection((args.connect, PORT), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    sock.sendall(struct.pack("!cQ", b"P", 200))
    for _ in range(200):
        t = time.perf_counter()
        sock.sendall(b"x")
        recv_exact(sock, 1)
        rtts.append(time.perf_counter() - t)
    # Bulk size: about --seconds at the expected rate (at least 4 MB).
    rate = args.rate if args.rate > 0 else 1000
    total = max(4 << 20, int(rate * 1e6 / 8 * args.seconds))
    out = {}
    for op, key in ((b"R", "mbit_01"), (b"S", "mbit_10")):
        t = time.perf_counter()
        sock.sendall(struct.pack("!cQ", op, total))
        if op == b"R":
            source(sock, total)
            recv_exact(sock, 1)
        else:
            sink(sock, total)
            sock.sendall(b"k")
        out[key] = total * 8 / (time.perf_counter() - t) / 1e6
    # Both directions at once, as a 2-rank ring all_reduce uses the link:
    # each direction then also carries the other's ACKs.
    t = time.perf_counter()
    sock.sendall(struct.pack("!cQ", b"B", total))
    both(sock, total)
    out["mbit_both"] = total * 8 / (time.perf_counter() - t) / 1e6
    sock.sendall(struct.pack("!cQ", b"Q", 0))
    sock.close()
    out["rtt_us"] = statistics.median(rtts) * 1e6
    out["rtt_min_us"] = min(rtts) * 1e6
    out["bytes"] = total
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns0", default="braid0")
    parser.add_argument("--ns1", default="braid1")
    parser.add_argument("--ip0", default="10.77.0.1")
    parser.add_argument("--ip1", default="10.77.0.2")
    parser.add_argument("--rate", type=float, default=0,
                        help="the configured rate, Mbit/s (sizes the transfer)")
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--connect", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
    elif args.connect:
        connect(args)
    else:
        client(args)


if __name__ == "__main__":
    main()
