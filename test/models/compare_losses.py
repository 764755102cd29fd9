"""Compares a braid-run loss log with a reference loss curve.

    compare_losses.py LOSS.csv REFERENCE.csv [--rtol R] [--steps N]

Both files have the header `step,loss`. Prints one line; exits 1 when a
step is missing or its loss differs from the reference by more than R
(relative, default 2e-4).
"""
import argparse
import csv
import sys


def read(path):
    with open(path) as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("loss")
    p.add_argument("reference")
    p.add_argument("--rtol", type=float, default=2e-4)
    p.add_argument("--steps", type=int, default=None)
    a = p.parse_args()
    got, want = read(a.loss), read(a.reference)
    steps = sorted(want)[: a.steps] if a.steps else sorted(want)
    missing = [s for s in steps if s not in got]
    if missing:
        print(f"FAIL: {a.loss} has no loss for steps {missing}")
        sys.exit(1)
    worst = max(abs(got[s] - want[s]) / abs(want[s]) for s in steps)
    ok = worst <= a.rtol
    print(f"{'PASS' if ok else 'FAIL'}: {len(steps)} steps, largest relative "
          f"difference {worst:.2e} (rtol {a.rtol:.0e})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
