//===- plan-loader-fuzzer.cpp - libFuzzer on the plan loader --------------===//
//
// Feeds mutated .bplan bytes to the runtime's plan loader (with a small
// weights file and the CPU kernel registry), then decodes a plan that loads
// as a backend does (runtime/exec/FuzzTargets.h). Only a crash, a sanitizer
// report or an escaping exception is a failure: every bad plan must end in
// PlanError.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/FuzzTargets.h"

#include <google/protobuf/stubs/logging.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // Protobuf 3.21 logs every string field with invalid UTF-8 it parses
  // ("String field ... contains invalid UTF-8 data") before the parse fails;
  // a failed parse is already a PlanError, and the millions of log lines
  // would bury libFuzzer's own output.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return -1;
  return braid::rt::fuzzLoadPlan(data, size);
}
