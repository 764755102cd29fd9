# -*- Python -*-
# lit configuration of the Braid tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Braid"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".onnxtxt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.braid_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit"]

# Debian installs FileCheck, not, count and mlir-opt under the LLVM bindir,
# not on PATH: put it (and our tools) first.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.braid_tools_dir, append_path=True)

config.substitutions.append(("%braid_src_root", config.braid_src_root))
config.substitutions.append(("%braid_obj_root", config.braid_obj_root))
config.substitutions.append(("%braid_libs", config.braid_lib_dir))
config.substitutions.append(("%braid_version", config.braid_version))
# The CPU GEMM libraries braid-run can use (BRAID_CPU_GEMM selects one).
for gemm in filter(None, config.braid_cpu_gemms.split(";")):
    config.available_features.add("cpu-gemm-" + gemm)
# mlir-opt-22 is not instrumented: under scripts/sanitize.sh our instrumented
# plugins need the ASan runtime preloaded into it (and only into it).
mlir_opt = os.path.join(config.llvm_tools_dir, "mlir-opt")
mlir_opt_preload = lit_config.params.get("mlir_opt_preload")
if mlir_opt_preload:
    mlir_opt = "env LD_PRELOAD=%s %s" % (mlir_opt_preload, mlir_opt)
config.substitutions.append(("%mlir_opt", mlir_opt))

# Python with numpy and onnx (the project's .venv, made by scripts/setup.sh).
config.substitutions.append(
    ("%python", os.path.join(config.braid_src_root, ".venv", "bin", "python")))
# mpirun as root on a small machine, each job with its own session directory
# (scripts/mpirun-isolated.sh says why).
config.substitutions.append(
    ("%mpirun", "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
     + os.path.join(config.braid_src_root, "scripts", "mpirun-isolated.sh")
     + " --oversubscribe"))
