//===- PlanError.h - a plan or weights file that cannot run -----*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_PLAN_PLANERROR_H
#define BRAID_RUNTIME_PLAN_PLANERROR_H

#include <stdexcept>

namespace braid::rt {

/// A plan file that is malformed or inconsistent with itself, with the
/// weights file or with the run (world size, kernel registry). The message
/// names the field and the offending value.
class PlanError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_PLAN_PLANERROR_H
