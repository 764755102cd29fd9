// CoCoD-SGD (braidc --train --parallel dp=P --algorithm cocod-sgd=K) on a
// small language model under mpirun against a numpy reimplementation of the
// algorithm (cocod_sgd.py: local SGD with momentum or AdamW on each rank's
// rows, every K steps x <- mean(x at the period's start) + (x - own x at the
// period's start), optimizer state local), 3 periods per run, 1e-4 relative
// per step; and the structure of a period: the averaging's all-reduces start
// before the first local step and are awaited after the last.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/cocod_sgd.py %t --mpirun "%mpirun" --configs "2:2:sgd,2:3:adamw,4:2:sgd,4:1:adamw" | FileCheck %s
// CHECK: PASS dp=2 K=2 sgd: 6 steps
// CHECK: PASS dp=2 K=3 adamw: 9 steps
// CHECK: PASS dp=4 K=2 sgd: 6 steps
// CHECK: PASS dp=4 K=1 adamw: 3 steps
// CHECK: PASS: 4 runs

// The example GPT-2 and LLaMA, 100 steps of SGD with momentum on dp=2 and
// dp=4 with K = 2 and 4: the loss decreases and ends within 5% of
// synchronous SGD's on the same windows (one rank, batch B, P times as many
// steps).
// RUN: %python %S/cocod_sgd.py %t/curves --mpirun "%mpirun" --models gpt2,llama --configs "2:2,2:4,4:2,4:4" | FileCheck %s --check-prefix=CURVES
// CURVES-COUNT-8: PASS {{gpt2|llama}} dp={{[24]}} K={{[24]}}: 100 steps
// CURVES: PASS: 8 runs

// RUN: braidc %t/tiny_lm.onnx --train --optimizer sgd --momentum 0.9 --parallel dp=2 --algorithm cocod-sgd=2 -o %t/period.mlir --progress=false
// RUN: FileCheck %s --check-prefix=PERIOD < %t/period.mlir
// PERIOD: braid.mesh @world(dp = 2)
// PERIOD: func.func @main(%arg0: tensor<8x8xi64> {braid.name = "input_ids"}, %arg1: tensor<8x8xi64> {braid.name = "labels"}) -> (tensor<2xf32> {braid.name = "loss"})
// PERIOD-SAME: algorithm = "cocod-sgd", batch = 4 : i64
// PERIOD-SAME: steps = 2 : i64
// The snapshot's average starts first, on the communication stream:
// PERIOD: %[[W:.*]] = braid.get_weight @embed :
// PERIOD-NEXT: %[[AVG:.*]] = braid.async on "comm" {
// PERIOD-NEXT: braid.all_reduce %[[W]] on @world["dp"] avg
// This rank's rows: K * B = 4 from rank * 4, then B = 2 per local step.
// PERIOD: %[[RANK:.*]] = braid.rank @world axis "dp"
// PERIOD: braid.cross_entropy
// PERIOD: braid.cross_entropy
// PERIOD-NOT: braid.cross_entropy
// x <- avg + (x - snapshot), after both local steps; the average is awaited
// before the last step's update (x - lr v - snapshot + avg: one tree,
// which braid-to-exec fuses into one kernel), not inside it:
// PERIOD: %[[MINE:.*]] = braid.await %[[AVG]]
// PERIOD: %[[DELTA:.*]] = braid.sub %{{.*}}, %[[W]]
// PERIOD-NEXT: %[[NEXT:.*]] = braid.add %[[MINE]], %[[DELTA]]
// The losses' average, issued once both losses exist:
// PERIOD: braid.all_reduce %{{.*}} on @world["dp"] avg : tensor<2xf32>
// PERIOD: braid.set_weight @embed, %[[NEXT]]

// braid-run: a period's steps per call, and no checkpoint of diverged ranks.
// RUN: braidc %t/tiny_lm.onnx --train --parallel dp=2 --algorithm cocod-sgd=2 -o %t/k2.bplan --progress=false
// RUN: not %mpirun -n 2 braid-run %t/k2.bplan --steps 5 --data %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=STEPS
// RUN: not %mpirun -n 2 braid-run %t/k2.bplan --steps 4 --data %t/tokens.bin --save %t/ckpt.safetensors 2>&1 | FileCheck %s --check-prefix=SAVE
// RUN: not test -e %t/ckpt.safetensors
// RUN: braid-run %t/k2.bplan --backend sim --hw dgx-h100 | FileCheck %s --check-prefix=SIM
// SIM: training plan: one call of 2 training steps simulated (cocod-sgd, batch 4 x sequence 8 = 32 tokens per step)
// STEPS: braid-run: error: --steps 5: the plan runs 2 steps per call (cocod-sgd period), so --steps must be a multiple of 2
// SAVE: braid-run: error: the plan trains with CoCoD-SGD: its ranks hold different parameters between averagings, so one checkpoint of them is not the run's state; --save and --resume are not supported for it yet

// period=auto: the fewest local steps whose compute covers the averaging on
// the cost model (a remark says which and why).
// RUN: braidc %t/tiny_lm.onnx --train --parallel dp=2 --algorithm cocod-sgd=auto --hw dgx-h100 -o %t/auto.bplan --progress=false 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO: remark: braid-cocod-sgd: period auto = {{[0-9]+}} (local steps per averaging; hw dgx-h100: one local step {{.*}} ms of compute, the parameters' average {{.*}} ms)
