// braid-run owns the CPU kernels' thread count: --threads N, by default the
// cores the process may use divided by the ranks mpirun started on the
// host (so two ranks on two cores do not each start two BLAS threads).
// RUN: braidc %braid_src_root/examples/models/gpt2/model.onnx -o %t.bplan --progress=false
// RUN: braid-run %t.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 --threads 1 | FileCheck %s
// RUN: braid-run %t.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 --threads=2 | FileCheck %s
// RUN: env -u OPENBLAS_NUM_THREADS braid-run %t.bplan --inputs %braid_src_root/examples/models/gpt2/test_data_set_0 --expected %braid_src_root/examples/models/gpt2/test_data_set_0 | FileCheck %s
// RUN: not braid-run %t.bplan --threads 0 2>&1 | FileCheck %s --check-prefix=ZERO
// RUN: not braid-run %t.bplan --threads 5000 2>&1 | FileCheck %s --check-prefix=MANY
// CHECK: PASS
// ZERO: braid-run: error: --threads needs a whole number from 1, got '0'
// MANY: braid-run: error: --threads needs a whole number from 1 to 4096
