// OPT (learned positions, ReLU, LayerNorm), exported by every torch exporter that can (examples/models/README.md):
// imported, run on one rank and partitioned under every preset, each rank's
// logits checked against onnxruntime's reference under mpirun.
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --emit=plan -o %t.opt_dynamo.1.bplan --progress=false
// RUN: braid-run %t.opt_dynamo.1.bplan --inputs %braid_src_root/examples/models/opt_dynamo/test_data_set_0 --expected %braid_src_root/examples/models/opt_dynamo/test_data_set_0 | FileCheck %s --check-prefix=ONE
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel tp=2 --emit=plan -o %t.opt_dynamo.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.opt_dynamo.tp2.bplan --inputs %braid_src_root/examples/models/opt_dynamo/test_data_set_0 --expected %braid_src_root/examples/models/opt_dynamo/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel tp=4 --emit=plan -o %t.opt_dynamo.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.opt_dynamo.tp4.bplan --inputs %braid_src_root/examples/models/opt_dynamo/test_data_set_0 --expected %braid_src_root/examples/models/opt_dynamo/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel sp=2 --emit=plan -o %t.opt_dynamo.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.opt_dynamo.sp2.bplan --inputs %braid_src_root/examples/models/opt_dynamo/test_data_set_0 --expected %braid_src_root/examples/models/opt_dynamo/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/opt_dynamo/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.opt_dynamo.dp2tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.opt_dynamo.dp2tp2.bplan --inputs %braid_src_root/examples/models/opt_dynamo/test_data_set_0 --expected %braid_src_root/examples/models/opt_dynamo/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --emit=plan -o %t.opt_torchscript.1.bplan --progress=false
// RUN: braid-run %t.opt_torchscript.1.bplan --inputs %braid_src_root/examples/models/opt_torchscript/test_data_set_0 --expected %braid_src_root/examples/models/opt_torchscript/test_data_set_0 | FileCheck %s --check-prefix=ONE
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel tp=2 --emit=plan -o %t.opt_torchscript.tp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.opt_torchscript.tp2.bplan --inputs %braid_src_root/examples/models/opt_torchscript/test_data_set_0 --expected %braid_src_root/examples/models/opt_torchscript/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel tp=4 --emit=plan -o %t.opt_torchscript.tp4.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.opt_torchscript.tp4.bplan --inputs %braid_src_root/examples/models/opt_torchscript/test_data_set_0 --expected %braid_src_root/examples/models/opt_torchscript/test_data_set_0 | FileCheck %s --check-prefix=FOUR
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel sp=2 --emit=plan -o %t.opt_torchscript.sp2.bplan --progress=false
// RUN: %mpirun -n 2 braid-run %t.opt_torchscript.sp2.bplan --inputs %braid_src_root/examples/models/opt_torchscript/test_data_set_0 --expected %braid_src_root/examples/models/opt_torchscript/test_data_set_0 | FileCheck %s --check-prefix=TWO
// RUN: braidc %braid_src_root/examples/models/opt_torchscript/model.onnx --parallel dp=2,tp=2 --emit=plan -o %t.opt_torchscript.dp2tp2.bplan --progress=false
// RUN: %mpirun -n 4 braid-run %t.opt_torchscript.dp2tp2.bplan --inputs %braid_src_root/examples/models/opt_torchscript/test_data_set_0 --expected %braid_src_root/examples/models/opt_torchscript/test_data_set_0 | FileCheck %s --check-prefix=FOUR

// ONE: {{^}}PASS
// TWO-COUNT-2: ] PASS
// TWO-NOT: FAIL
// FOUR-COUNT-4: ] PASS
// FOUR-NOT: FAIL
