//===- Contention.h - communication and computation on one GPU --*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// NCCL's collectives are kernels: while one runs, it holds SMs (one CTA per
// channel) and moves its bytes through the GPU's memory, so a kernel that
// runs at the same time on another stream gets fewer SMs and less memory
// bandwidth, and the collective gets fewer issue slots. The model is a pair
// of constant slowdown factors per profile (ContentionSpec), applied to the
// rate at which work progresses while the other side runs:
//
//   a GEMM or attention kernel        x matrix_slowdown, derived from the
//       SMs NCCL takes: sm_count / (sm_count - comm_sms);
//   any other (memory-bound) kernel   x memory_slowdown, from the share of
//       memory bandwidth the collective's traffic takes;
//   a collective                      x comm_slowdown, while any kernel runs.
//
// Work that does not overlap runs at full speed. Several kernels on several
// compute streams share the GPU (each runs at 1/n of its rate), and several
// collectives on the same link class share that link the same way; the
// simulator (runtime/sim/Simulator.h) applies these rates in virtual time.
// The factors are estimates with their derivation in the profiles' sources
// and in docs/cost-model.md; bench/calibrate-gpu measures them on a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COST_CONTENTION_H
#define BRAID_RUNTIME_COST_CONTENTION_H

#include "runtime/cost/HardwareProfile.h"
#include "runtime/cost/Roofline.h"

namespace braid::rt {

/// The factor (>= 1) by which a kernel of `kernelClass` takes longer while a
/// collective runs on the same GPU; 1 when none does.
double kernelSlowdown(const ContentionSpec &contention, KernelClass kernelClass,
                      bool collectiveRunning);

/// The factor (>= 1) by which a collective takes longer while a kernel runs
/// on the same GPU; 1 when none does.
double collectiveSlowdown(const ContentionSpec &contention, bool kernelRunning);

/// The matrix slowdown a collective holding `commSms` of `smCount` SMs
/// causes: smCount / (smCount - commSms). Throws std::invalid_argument
/// unless 0 <= commSms < smCount.
double smShareSlowdown(int64_t smCount, int64_t commSms);

/// What changes when the plan caps communication at `commSms` SMs (COMET's
/// resource share; 0 or the profile's own value: nothing): GEMMs lose that
/// many SMs instead of the profile's, and a collective on fewer SMs than the
/// profile's NCCL uses (fewer channels) takes longer in proportion; more
/// than that does not make it faster.
struct CommShare {
  ContentionSpec contention;
  double collectiveTimeScale = 1;
};
/// Throws std::invalid_argument unless 0 <= commSms < the GPU's SM count.
CommShare applyCommSms(const HardwareProfile &profile, int64_t commSms);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COST_CONTENTION_H
