"""Checks a merged multi-rank Chrome trace (braid-run --trace under mpirun):

    check_merged_trace.py TRACE RANKS

valid JSON; one process per rank, named; within each rank and stream the
busy events follow one another in time; and each collective overlaps its
counterparts on the other ranks (none can finish before every rank has
started it), which holds only when the ranks' clocks are aligned.
"""
import json
import sys
from collections import defaultdict

COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
               "permute", "broadcast"}
# How far the ranks' clocks may disagree: the spread of a barrier's exits.
SLACK_US = 2000.0


def main():
    path, ranks = sys.argv[1], int(sys.argv[2])
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert sorted(names) == list(range(ranks)), names
    assert all(names[r] == "rank %d" % r for r in names), names
    work = [e for e in events if e.get("ph") == "X"]
    by_track = defaultdict(list)
    for e in work:
        by_track[(e["pid"], e["tid"])].append(e)
    for track, items in by_track.items():
        busy = [e for e in items if e["cat"] == "work"]
        for a, b in zip(busy, busy[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-3, (track, a, b)
    # The k-th collective of a stream on each rank is the same collective.
    per_rank = defaultdict(list)
    for e in work:
        if e["name"] in COLLECTIVES:
            per_rank[e["pid"]].append(e)
    counts = {r: len(per_rank[r]) for r in range(ranks)}
    assert len(set(counts.values())) == 1 and counts[0] > 0, counts
    for items in per_rank.values():
        items.sort(key=lambda e: (e["tid"], e["ts"]))
    for k in range(counts[0]):
        group = [per_rank[r][k] for r in range(ranks)]
        latest_start = max(e["ts"] for e in group)
        earliest_end = min(e["ts"] + e["dur"] for e in group)
        assert latest_start <= earliest_end + SLACK_US, (k, group)
    print("merged trace: %d ranks, %d events, %d collectives per rank, "
          "each overlapping on every rank" % (ranks, len(work), counts[0]))


if __name__ == "__main__":
    main()
