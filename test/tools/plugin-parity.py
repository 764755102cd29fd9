#!/usr/bin/env python3
"""Plugin parity: every pass and named pipeline braid-opt has runs in
mlir-opt-22 with the Braid plugins, with the same result.

    plugin-parity.py BRAID_OPT "MLIR_OPT" PLUGIN_DIR INPUT...

Lists the --braid-* passes and pipelines in both tools' --help (the lists must
be equal), then runs each one in both tools through
--pass-pipeline='builtin.module(NAME)' on each input and compares exit status,
output and diagnostics (with the tool's name taken out). mlir-opt-22 parses
its pass flags before it loads plugins, so a plugin's passes are reachable
through --pass-pipeline only (upstream's limit; README.md).
"""
import re
import shlex
import subprocess
import sys


def names(command):
    out = subprocess.run(command + ["--help"], capture_output=True, text=True,
                         check=True).stdout
    return sorted(set(re.findall(r"^\s+--(braid-[a-z0-9-]+)", out, re.M)))


def run(command, name, path):
    result = subprocess.run(
        command + [path, "--pass-pipeline=builtin.module(%s)" % name],
        capture_output=True, text=True, timeout=300)
    if result.returncode < 0:
        sys.exit("plugin-parity: %s on %s: killed by signal %d"
                 % (name, path, -result.returncode))
    # Diagnostics name the tool ("braid-opt:", "mlir-opt:"); nothing else may
    # differ.
    stderr = re.sub(r"\b(braid-opt|mlir-opt)\b", "TOOL", result.stderr)
    return result.returncode, result.stdout, stderr


def main():
    braid_opt = [sys.argv[1]]
    plugin_dir = sys.argv[3]
    mlir_opt = shlex.split(sys.argv[2]) + [
        "--load-dialect-plugin=%s/libBraidDialectPlugin.so" % plugin_dir,
        "--load-pass-plugin=%s/libBraidPassPlugin.so" % plugin_dir]
    inputs = sys.argv[4:]
    ours, theirs = names(braid_opt), names(mlir_opt)
    if ours != theirs:
        sys.exit("plugin-parity: braid-opt only: %s; mlir-opt-22 only: %s"
                 % (sorted(set(ours) - set(theirs)),
                    sorted(set(theirs) - set(ours))))
    if len(ours) < 20:
        sys.exit("plugin-parity: only %d braid passes listed" % len(ours))
    failures = 0
    ran = 0
    for name in ours:
        for path in inputs:
            a, b = run(braid_opt, name, path), run(mlir_opt, name, path)
            ran += 1
            if a != b:
                failures += 1
                print("plugin-parity: %s on %s: braid-opt exit %d, "
                      "mlir-opt-22 exit %d%s" % (
                          name, path, a[0], b[0],
                          "" if a[0] != b[0] else
                          " (outputs differ)" if a[1] != b[1] else
                          " (diagnostics differ)"))
                print("  braid-opt:   " + a[2][:300].replace("\n", "\n  "))
                print("  mlir-opt-22: " + b[2][:300].replace("\n", "\n  "))
    print("plugin-parity: %d passes and pipelines, %d runs, %d differ"
          % (len(ours), ran, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
