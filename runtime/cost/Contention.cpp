//===- Contention.cpp - communication and computation on one GPU ----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/Contention.h"

#include <stdexcept>
#include <string>

namespace braid::rt {

double kernelSlowdown(const ContentionSpec &contention, KernelClass kernelClass,
                      bool collectiveRunning) {
  if (!collectiveRunning)
    return 1;
  return kernelClass == KernelClass::Memory ? contention.memorySlowdown
                                            : contention.matrixSlowdown;
}

double collectiveSlowdown(const ContentionSpec &contention,
                          bool kernelRunning) {
  return kernelRunning ? contention.commSlowdown : 1;
}

double smShareSlowdown(int64_t smCount, int64_t commSms) {
  if (commSms < 0 || commSms >= smCount)
    throw std::invalid_argument(
        "smShareSlowdown: communication SMs must be in [0, " +
        std::to_string(smCount) + "), got " + std::to_string(commSms));
  return static_cast<double>(smCount) / static_cast<double>(smCount - commSms);
}

CommShare applyCommSms(const HardwareProfile &profile, int64_t commSms) {
  CommShare share{profile.contention, 1};
  int64_t nominal = profile.contention.commSms;
  if (commSms == 0 || commSms == nominal || nominal <= 0)
    return share;
  share.contention.matrixSlowdown =
      smShareSlowdown(profile.gpu.smCount, commSms);
  share.contention.commSms = commSms;
  if (commSms < nominal)
    share.collectiveTimeScale =
        static_cast<double>(nominal) / static_cast<double>(commSms);
  return share;
}

} // namespace braid::rt
