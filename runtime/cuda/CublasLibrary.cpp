//===- CublasLibrary.cpp - cuBLAS, loaded when first used -----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CublasLibrary.h"

#include "runtime/cuda/CudaContext.h"

#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace braid::rt::cuda {
namespace {

template <typename Pointer>
void resolve(void *library, const char *name, Pointer &pointer) {
  void *symbol = dlsym(library, name);
  if (!symbol) {
    const char *why = dlerror();
    throw CudaError(std::string("cuBLAS has no ") + name + ": " +
                    (why ? why : "symbol not found"));
  }
  pointer = reinterpret_cast<Pointer>(symbol);
}

CublasLibrary load() {
  const std::string versioned =
      "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void *library = nullptr;
  std::string errors;
  for (const std::string &name : {versioned, std::string("libcublas.so")}) {
    library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library)
      break;
    const char *why = dlerror();
    errors += "\n  " + name + ": " + (why ? why : "not found");
  }
  if (!library)
    throw CudaError("cannot load cuBLAS (the CUDA backend's GEMMs):" + errors);
  // The library stays loaded for the life of the process.
  CublasLibrary api;
  resolve(library, "cublasCreate_v2", api.create);
  resolve(library, "cublasDestroy_v2", api.destroy);
  resolve(library, "cublasSetStream_v2", api.setStream);
  resolve(library, "cublasSetWorkspace_v2", api.setWorkspace);
  resolve(library, "cublasGemmStridedBatchedEx", api.gemmStridedBatchedEx);
  resolve(library, "cublasGetStatusName", api.statusName);
  resolve(library, "cublasGetStatusString", api.statusString);
  return api;
}

} // namespace

const CublasLibrary &cublas() {
  // A failed load throws out of call_once and is retried on the next call.
  static std::once_flag once;
  static CublasLibrary api;
  std::call_once(once, [] { api = load(); });
  return api;
}

} // namespace braid::rt::cuda
