//===- BraidRunProcess.h - run the braid-run binary in a test ---*- C++ -*-===//
//
// Tests of braid-run's command line run the real binary (BRAID_RUN_PATH, set
// by runtime/unittests/CMakeLists.txt) and look at its exit status and output.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_EXEC_BRAIDRUNPROCESS_H
#define BRAID_RUNTIME_UNITTESTS_EXEC_BRAIDRUNPROCESS_H

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace braid::rt::test {

struct BraidRunResult {
  int status;
  std::string output;
};

/// Runs braid-run with `arguments`; returns its exit status (-1 if it did
/// not exit normally) and its stdout and stderr together.
inline BraidRunResult braidRun(const std::string &arguments) {
  std::string command = std::string(BRAID_RUN_PATH) + " " + arguments + " 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  BraidRunResult result{-1, ""};
  if (!pipe)
    return result;
  char buffer[4096];
  size_t read;
  while ((read = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, read);
  int status = ::pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_EXEC_BRAIDRUNPROCESS_H
