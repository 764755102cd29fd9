// --help lists the tools' own options first and none of the LLVM backends'
// options libMLIR registers; --version prints the project's version.

// RUN: braidc --help | FileCheck %s --check-prefix=BRAIDC --implicit-check-not=amdgpu --implicit-check-not=aarch64 --implicit-check-not=x86-
// BRAIDC: OPTIONS:
// BRAIDC-EMPTY:
// BRAIDC-NEXT: Braid options:
// BRAIDC: --emit=<value>
// BRAIDC: -o <file> {{.*}} .bplan a plan, anything else (and - for stdout, the default) braid IR
// BRAIDC: --overlap=
// BRAIDC: --parallel=
// BRAIDC: Generic Options:
// BRAIDC: --version

// RUN: braid-translate --help | FileCheck %s --check-prefix=TRANSLATE --implicit-check-not=amdgpu --implicit-check-not=aarch64
// TRANSLATE: OPTIONS:
// TRANSLATE-EMPTY:
// TRANSLATE-NEXT: Braid options:
// TRANSLATE: --import-onnx
// TRANSLATE: --raw

// RUN: braid-eval --help | FileCheck %s --check-prefix=EVAL --implicit-check-not=amdgpu --implicit-check-not=aarch64
// EVAL: OPTIONS:
// EVAL-EMPTY:
// EVAL-NEXT: Braid options:
// EVAL: --test-data=<dir>

// braid-opt keeps what an mlir-opt user needs: pass and pipeline flags
// first, --pass-pipeline, the --mlir-* flags, -o.
// RUN: braid-opt --help | FileCheck %s --check-prefix=OPT --implicit-check-not=amdgpu --implicit-check-not=aarch64 --implicit-check-not=x86-
// OPT: OPTIONS:
// OPT-EMPTY:
// OPT-NEXT: Braid options:
// OPT: --braid-partition
// OPT: --braid-overlap-pipeline
// OPT-NEXT: --force
// OPT-NEXT: --gather-stream=<string>
// OPT-NEXT: --hw=<string>
// OPT-NEXT: --memory-limit=<long>
// OPT-NEXT: --overlap=<step>
// OPT-NEXT: --prefetch=<string>
// OPT: --braid-parallel-pipeline
// OPT: General options:
// OPT: --mlir-print-ir-after-all
// OPT: -o <filename>
// OPT: --pass-pipeline=
// OPT: --split-input-file
// OPT: --verify-diagnostics

// RUN: braidc --version | FileCheck %s --check-prefix=VERSION -DTOOL=braidc -DVERSION=%braid_version
// RUN: braid-opt --version | FileCheck %s --check-prefix=VERSION -DTOOL=braid-opt -DVERSION=%braid_version
// RUN: braid-translate --version | FileCheck %s --check-prefix=VERSION -DTOOL=braid-translate -DVERSION=%braid_version
// RUN: braid-eval --version | FileCheck %s --check-prefix=VERSION -DTOOL=braid-eval -DVERSION=%braid_version
// RUN: braid-run --version | FileCheck %s --check-prefix=VERSION -DTOOL=braid-run -DVERSION=%braid_version
// VERSION: [[TOOL]] (Braid) [[VERSION]]{{$}}
// VERSION-NOT: LLVM version
// RUN: braid-run --version | FileCheck %s --check-prefix=RUN-GEMM
// RUN-GEMM: CPU GEMM: {{(oneDNN [0-9]+\.[0-9]+\.[0-9]+ \(sgemm\)|OpenBLAS \(.*\))}}{{$}}
// RUN: braid-run --help | FileCheck %s --check-prefix=RUN-HELP
// RUN-HELP: --version           the version of Braid, and the CPU GEMM library

// An unknown BRAID_CPU_GEMM is an error naming the libraries this build has.
// RUN: env BRAID_CPU_GEMM=mkl not braid-run --version 2>&1 | FileCheck %s --check-prefix=BAD-GEMM
// BAD-GEMM: braid-run: error: BRAID_CPU_GEMM=mkl: this build's CPU GEMM libraries are {{(onednn|openblas)}}
