#!/usr/bin/env bash
# Builds all of Braid (compiler and runtime, CUDA off) with AddressSanitizer
# and UndefinedBehaviorSanitizer on its own code and runs the whole test
# suite under them (ctest: unit tests, lit tests, mpirun runs):
#
#   scripts/sanitize.sh [ctest flags...]     e.g. -R BraidRuntime
#
# The build folder is build-sanitize/ (BRAID_SANITIZE_BUILD_DIR), Debug so
# that assert() and LLVM_DEBUG code paths of our own code run, at -O1 -g1:
# -O0 doubles the run time of the end-to-end tests for nothing the
# sanitizers need, and full debug info makes MLIR's objects several times
# larger on a small machine. Only our sources get the flags; Debian's
# libLLVM, libMLIR, libprotobuf, libonnx, OpenBLAS and OpenMPI are not
# instrumented (ASan still sees their heap through its malloc, so leak
# reports can point into them: scripts/sanitize-lsan.supp, one reason per
# entry, never our code).
#
# Running it:
#   - a UBSan report aborts the process (-fno-sanitize-recover=undefined), so
#     a test that hits one fails;
#   - leaks fail a process too (detect_leaks=1), except those suppressed;
#   - mlir-opt-22 is not instrumented, so loading our instrumented plugins
#     into it needs the ASan runtime first in the process: lit's %mlir_opt
#     gets LD_PRELOAD of libasan for that one command (LIT_OPTS below); no
#     other process is preloaded (Python, mpirun and FileCheck run as usual
#     and start our instrumented tools, which carry their runtime).
#
# Environment: BRAID_JOBS build parallelism (default: nproc),
# BRAID_TEST_JOBS ctest parallelism (default: BRAID_JOBS).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BRAID_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
jobs="${BRAID_JOBS:-$(nproc)}"
test_jobs="${BRAID_TEST_JOBS:-$jobs}"
sanitizers="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
flags="$sanitizers -fno-omit-frame-pointer"

start=$(date +%s)
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$sanitizers" \
    -DCMAKE_SHARED_LINKER_FLAGS="$sanitizers" \
    -DCMAKE_MODULE_LINKER_FLAGS="$sanitizers" \
    -DBRAID_RUNTIME_WITH_CUDA=OFF
fi
cmake --build "$build" -j "$jobs"
built=$(date +%s)

libasan="$("${CXX:-c++}" -print-file-name=libasan.so)"
# allow_user_poisoning=0: LLVM's BumpPtrAllocator poisons the unused rest of
#   a slab when its inline code is compiled with ASan (ours), and libMLIR's
#   uninstrumented copy allocates from the same slab (attribute storage)
#   without unpoisoning, so libc's memmove interceptor reports a
#   use-after-poison that is not one.
# detect_odr_violation=1: the dialect and pass plugins both carry the braid
#   dialect's TypeID globals; loaded into one mlir-opt, ELF interposition
#   makes them one, and only a size mismatch would be a real violation.
# fast_unwind_on_malloc=0: OpenMPI has no frame pointers, so the fast
#   unwinder stops inside it and leak stacks never reach the frames the
#   suppressions name.
# intercept_tls_get_addr=0: GCC 12's runtime (up to GCC 13 / LLVM 16) takes
#   a dynamic TLS block that happens to start at a page offset equal to the
#   size of glibc 2.19's TLS header for one that has it, and reads the two
#   words before it as a range to scan; LeakSanitizer's tracer then dies on
#   a small address at exit ("Tracer caught signal 11" in
#   ScanRangeForPointers). OpenMPI's dlopen'd components have dynamic TLS,
#   so 4-rank mpirun tests hit it now and then (runs 2-4, none
#   reproducible alone; docs/results.md "Sanitizers"). Without the interceptor the blocks are not scanned
#   as roots; our code has no dynamic TLS.
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:abort_on_error=1:symbolize=1:allow_user_poisoning=0:detect_odr_violation=1:fast_unwind_on_malloc=0:intercept_tls_get_addr=0"
export LSAN_OPTIONS="suppressions=$root/scripts/sanitize-lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LIT_OPTS="${LIT_OPTS:-} --param mlir_opt_preload=$libasan"
status=0
# Two ctest entries are sized for a release build and time out under the
# sanitizers (10x slower): the 2000-case partition fuzzer and the 2,200
# pipelines of braid-compose-passes. Without ctest flags they are replaced by
# smaller runs of the same tools (300 cases; one configuration's pairs with
# the chunking passes), which still cover every pass. braid-cmake-package is
# left out: it checks install rules, and its out-of-tree program and
# mlir-opt-22 would need the sanitizer runtime linked or preloaded.
if [ "$#" = 0 ]; then
  set -- -E '^(braid-fuzz-partition|braid-compose-passes|braid-cmake-package)$'
  OPENBLAS_NUM_THREADS=1 "$build/bin/braid-fuzz-partition" --seed=1 \
    --count=300 --max-minimize=0 || status=$?
  "$root/.venv/bin/python" "$root/test/passes/compose-passes.py" \
    "$build/bin" "$root/examples/models" "$build/compose-passes" \
    --jobs "$test_jobs" --config gpt2-tp2 --only braid-domino || status=$?
fi
ctest --test-dir "$build" -j "$test_jobs" --output-on-failure "$@" || status=$?
finished=$(date +%s)
echo "sanitize: build $((built - start)) s, tests $((finished - built)) s; ctest exit status $status"
exit "$status"
