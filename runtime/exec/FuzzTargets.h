//===- FuzzTargets.h - libFuzzer entry points of the runtime ----*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Plans and weights files are untrusted input. These entry points take
// arbitrary bytes as one of them, load them as the runtime does and then do
// everything a backend does with a loaded plan before it runs (decode the
// steps for a rank, lay out collectives, order the streams, write the
// constants and weight shards). A rejected input (PlanError, WeightsError)
// is the expected outcome; any other exception, a crash, a sanitizer report
// or a broken guarantee of the loader (checked here; it aborts) is a bug.
//
// They live in the runtime, not in tools/fuzz, so that unit tests replay the
// failing inputs the fuzzers found in any build (tools/fuzz/README.md).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_EXEC_FUZZTARGETS_H
#define BRAID_RUNTIME_EXEC_FUZZTARGETS_H

#include <cstddef>
#include <cstdint>

namespace braid::rt {

/// Loads `data` as a .bplan against the CPU kernels and a small built-in
/// weights file; a plan that loads is then decoded for its first and last
/// rank and its initial data is written. Returns 0.
int fuzzLoadPlan(const uint8_t *data, size_t size);

/// Opens `data` as a .safetensors file; one that opens is then loaded by a
/// plan made for it (every tensor Braid can hold as a weight, split along
/// its first dimension over a mesh axis of 2 where that divides, and a
/// block that leaves out the first column), whose shards on both ranks must
/// equal the tensors' elements. Returns 0.
int fuzzLoadWeights(const uint8_t *data, size_t size);

} // namespace braid::rt

#endif // BRAID_RUNTIME_EXEC_FUZZTARGETS_H
