//===- safetensors-fuzzer.cpp - libFuzzer on the weights reader -----------===//
//
// Feeds mutated .safetensors bytes to the runtime's weights reader; a file
// that opens is then loaded by a plan made for its tensors, and every shard
// that plan puts on each of its two ranks is checked element by element
// (runtime/exec/FuzzTargets.h). Only a crash, a sanitizer report or an
// escaping exception is a failure: every bad file must end in WeightsError.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/FuzzTargets.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return -1;
  return braid::rt::fuzzLoadWeights(data, size);
}
