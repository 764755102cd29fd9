//===- plan-loader-fuzzer.cpp - libFuzzer on the plan loader --------------===//
//
// Feeds mutated .bplan bytes to the runtime's plan loader (with a small
// weights file and the CPU kernel registry). Only a crash, a sanitizer report
// or an escaping exception is a failure: every bad plan must end in PlanError.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanLoader.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return -1;
  return braid::rt::fuzzLoadPlan(data, size);
}
