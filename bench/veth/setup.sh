#!/usr/bin/env bash
# Two network namespaces, braid0 and braid1, joined by a veth pair whose two
# ends are rate-limited with tbf (each direction separately, like a full-duplex
# link) and optionally delayed with netem.
#
# usage: setup.sh RATE_MBIT [DELAY_MS]     (root; idempotent: re-running with
#                                          other numbers replaces the qdiscs)
#
#   braid0: veth-b0 10.77.0.1/24      braid1: veth-b1 10.77.0.2/24
#
# Needs only iproute2 (ip, tc) and python3. Prints the qdiscs, a TCP round
# trip time and the achieved TCP throughput in each direction (tcpbench.py;
# iperf3 is used instead when it is installed and BRAID_VETH_IPERF=1).
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 RATE_MBIT [DELAY_MS]" >&2
  exit 2
fi
RATE="$1"
DELAY="${2:-0}"
case "$RATE" in ''|*[!0-9.]*) echo "setup: RATE_MBIT must be a number" >&2; exit 2;; esac
case "$DELAY" in ''|*[!0-9.]*) echo "setup: DELAY_MS must be a number" >&2; exit 2;; esac
[ "$(id -u)" -eq 0 ] || { echo "setup: needs root (ip netns, tc)" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

NS0=braid0 NS1=braid1 IF0=veth-b0 IF1=veth-b1 IP0=10.77.0.1 IP1=10.77.0.2
MTU=1500

# Namespaces and the veth pair (created once).
for ns in $NS0 $NS1; do
  ip netns list | grep -qw "^$ns" || ip netns add "$ns"
  ip -n "$ns" link set lo up
done
if ! ip -n $NS0 link show $IF0 >/dev/null 2>&1; then
  # A half-made pair (e.g. from an interrupted run) is removed first.
  ip link del $IF0 2>/dev/null || true
  ip -n $NS1 link del $IF1 2>/dev/null || true
  ip link add $IF0 mtu $MTU netns $NS0 type veth peer name $IF1 mtu $MTU netns $NS1
fi
ip -n $NS0 addr replace $IP0/24 dev $IF0
ip -n $NS1 addr replace $IP1/24 dev $IF1
ip -n $NS0 link set $IF0 up
ip -n $NS1 link set $IF1 up

# Token bucket sizing.
#   burst: the bytes that may leave back to back at veth speed (~tens of
#   Gbit/s). It must hold at least one MTU frame, and should hold about one
#   millisecond of traffic at the rate so the bucket refills smoothly across
#   timer and scheduling jitter on this 2-core VM; much more would let small
#   messages (the GPT-2 example's all_reduces are a few KB) pass at veth speed
#   instead of the configured rate. So burst = max(16 KB, rate * 1 ms):
#   16 KB up to 128 Mbit, 125 KB at 1 Gbit.
#   latency: how long a packet may wait in the bucket's queue before it is
#   dropped (the queue holds rate * latency bytes). 100 ms holds several TCP
#   windows at these rates, so a bulk transfer is shaped by queueing, not by
#   drops and retransmits (which would add variance, not bandwidth limits).
burst_bytes=$(python3 -c "print(max(16384, int($RATE * 1e6 / 8 * 1e-3)))")
tbf="tbf rate ${RATE}mbit burst ${burst_bytes} latency 100ms"
delayed=$(python3 -c "print(1 if float('$DELAY') > 0 else 0)")
for pair in "$NS0 $IF0" "$NS1 $IF1"; do
  set -- $pair
  ns=$1 dev=$2
  tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
  if [ "$delayed" = 1 ]; then
    # netem delays, then tbf shapes (netem's documented nesting). netem's
    # queue must hold a bandwidth-delay product of packets.
    limit=$(python3 -c "print(max(1000, int($RATE*1e6/8*($DELAY*1e-3+0.1)/$MTU)*2))")
    if ! tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "${DELAY}ms" limit "$limit" 2>/dev/null; then
      # Leave a consistent link (tbf only on both ends), then fail.
      for p2 in "$NS0 $IF0" "$NS1 $IF1"; do
        set -- $p2
        tc -n "$1" qdisc del dev "$2" root 2>/dev/null || true
        tc -n "$1" qdisc add dev "$2" root handle 1: $tbf
      done
      echo "setup: this kernel ($(uname -r)) has no netem qdisc (sch_netem), so DELAY_MS cannot be applied; the link is rate-limited without delay" >&2
      exit 3
    fi
    tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: $tbf
  else
    tc -n "$ns" qdisc add dev "$dev" root handle 1: $tbf
  fi
done

echo "setup: $NS0/$IF0 $IP0 <-> $NS1/$IF1 $IP1, ${RATE} Mbit/s per direction, burst ${burst_bytes} B, delay ${DELAY} ms"
tc -n $NS0 qdisc show dev $IF0
tc -n $NS1 qdisc show dev $IF1

# Connectivity and throughput (run.py measures them itself).
[ "${BRAID_VETH_NO_BENCH:-0}" = 1 ] && exit 0
if command -v ping >/dev/null 2>&1; then
  ip netns exec $NS0 ping -c 3 -i 0.2 -q $IP1 | tail -2
fi
if [ "${BRAID_VETH_IPERF:-0}" = 1 ] && command -v iperf3 >/dev/null 2>&1; then
  ip netns exec $NS1 iperf3 -s -1 -D -B $IP1 >/dev/null
  sleep 0.3
  ip netns exec $NS0 iperf3 -c $IP1 -t 3 | grep -E "sender|receiver"
else
  python3 "$here/tcpbench.py" --ns0 $NS0 --ns1 $NS1 --ip1 $IP1 --ip0 $IP0 --rate "$RATE"
fi
