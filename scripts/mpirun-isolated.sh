#!/usr/bin/env bash
# mpirun with a session directory of its own: mpirun-isolated.sh ARGS... runs
# "${BRAID_MPIRUN:-mpirun}" ARGS... and returns its exit status.
#
# Open MPI 4 puts every job's session directory under one per-user directory
# in $TMPDIR (ompi.<host>.<uid>) and removes that directory when a job ends.
# Two jobs that start and end at the same moment race on it and one of them
# dies in orte_init with "orte_session_dir failed" (a parallel ctest or lit
# run hit this in CI). A temporary base per job takes the race away.
set -uo pipefail
base="$(mktemp -d "${TMPDIR:-/tmp}/braid-mpirun.XXXXXX")" || {
  echo "mpirun-isolated.sh: cannot make a session directory under ${TMPDIR:-/tmp}" >&2
  exit 1
}
trap 'rm -rf "$base"' EXIT
OMPI_MCA_orte_tmpdir_base="$base" "${BRAID_MPIRUN:-mpirun}" "$@"
