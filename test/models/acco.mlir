// ACCO (braidc --train --parallel dp=P --algorithm acco=M) on a small
// language model under mpirun against a numpy reimplementation of the
// authors' algorithm (acco.py: per call an estimate step from the pending
// gradients with the optimizer state restored, M micro-batches at t, the
// real step on both halves, M micro-batches at the estimate), 3 optimizer
// steps per run, 1e-4 relative per logged loss; the rule without the
// estimate and the rule without the restore both differ by more. And the
// synchronous baseline, accumulate=N (ZeRO-1 with N micro-batches per step),
// against numpy too.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/acco.py %t --mpirun "%mpirun" | FileCheck %s
// CHECK: PASS dp=2 M=1 sgd: 6 steps
// CHECK: PASS dp=2 M=2 adamw: 12 steps
// CHECK: PASS dp=4 M=1 adamw_clip: 6 steps
// CHECK: PASS dp=4 M=2 sgd: 12 steps
// CHECK: PASS dp=2 accumulate=3 adamw: 9 steps
// CHECK: PASS dp=4 accumulate=2 sgd: 6 steps
// CHECK: PASS dp=2 accumulate=1 adamw: 3 steps
// CHECK: PASS: 7 runs

// A run-time micro-batch count (acco=M:N): each rank's optional
// micro-batches fixed by braid-run --optional-groups (all or none per rank,
// so that the run is reproducible) against the numpy rule with unequal
// per-rank counts: sums over the ranks' total count, each logged loss the
// mean over the ranks that ran it, slots no rank ran not logged.
// RUN: %python %S/acco.py %t/dynamic --mpirun "%mpirun" --dynamic "2:1:2:adamw:all+none,2:1:3:sgd:none+all,4:1:2:adamw_clip:all+none+all+none,2:2:3:adamw:all+all,2:1:2:sgd:none+none" | FileCheck %s --check-prefix=DYNAMIC
// DYNAMIC: PASS dp=2 acco=1:2 adamw all,none: 12 of 12 micro-batches logged
// DYNAMIC: PASS dp=2 acco=1:3 sgd none,all: 18 of 18 micro-batches logged
// DYNAMIC: PASS dp=4 acco=1:2 adamw_clip all,none,all,none: 12 of 12
// DYNAMIC: PASS dp=2 acco=2:3 adamw all,all: 18 of 18
// DYNAMIC: PASS dp=2 acco=1:2 sgd none,none: 6 of 12 micro-batches logged
// DYNAMIC: PASS: 5 runs

// The example GPT-2 and LLaMA, 100 micro-batches of AdamW on dp=2 and dp=4:
// the loss decreases and ends within 5% of synchronous training with the
// same optimizer steps on the same windows (accumulate=2M).
// RUN: %python %S/acco.py %t/curves --mpirun "%mpirun" --models gpt2,llama --configs "2:1,4:2" | FileCheck %s --check-prefix=CURVES
// CURVES-COUNT-4: PASS {{gpt2|llama}} dp={{[24]}} M={{[12]}}: 100 micro-batches
// CURVES: PASS: 4 runs

// The program of one call (M = 1, before scheduling): the estimate's
// reduce-scatters of the pending sums and all-gathers come before the first
// micro-batch, the real step's after it and before the second; the
// optimizer state is read and set split, the pending sums per rank.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm acco --overlap none -o %t/acco.mlir --progress=false
// RUN: FileCheck %s --check-prefix=CALL < %t/acco.mlir
// CALL: braid.mesh @world(dp = 2)
// CALL: braid.weight @bias.acco_pending zeros state : tensor<2x16xf32>
// CALL: braid.weight @braid.acco.count zeros state : tensor<f32>
// CALL: func.func @main(%arg0: tensor<8x8xi64> {braid.name = "input_ids"}, %arg1: tensor<8x8xi64> {braid.name = "labels"}) -> (tensor<2xf32> {braid.name = "loss"})
// CALL-SAME: algorithm = "acco", batch = 4 : i64
// CALL-SAME: steps = 2 : i64
// CALL: braid.get_weight @embed.exp_avg sharded on @world {{\[\["dp"\], \[\]\]}} : tensor<8x8xf32>
// CALL: braid.get_weight @embed.acco_pending sharded on @world {{\[\["dp"\], \[\], \[\]\]}} : tensor<1x16x8xf32>
// CALL-COUNT-3: braid.reduce_scatter
// CALL-COUNT-3: braid.all_gather
// CALL: braid.cross_entropy
// CALL-COUNT-3: braid.reduce_scatter
// CALL-COUNT-3: braid.all_gather
// CALL: braid.cross_entropy
// CALL-NOT: braid.cross_entropy
// CALL: braid.set_weight @embed.exp_avg, %{{.*}} sharded on @world {{\[\["dp"\], \[\]\]}} : tensor<8x8xf32>
// CALL: braid.set_weight @embed, %{{.*}} : tensor<16x8xf32>
// CALL: braid.set_weight @embed.acco_pending, %{{.*}} sharded on @world {{\[\["dp"\], \[\], \[\]\]}} : tensor<1x16x8xf32>
// CALL: braid.set_weight @braid.acco.count
// CALL: braid.all_reduce %{{.*}} on @world["dp"] avg : tensor<2xf32>

// Scheduled (the default): the estimate's reduce-scatters go out before
// the first micro-batch's compute, the real step's after it, and the
// second micro-batch waits for the estimate's all-gathers.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm acco -o %t/scheduled.mlir --progress=false
// RUN: FileCheck %s --check-prefix=SCHEDULED < %t/scheduled.mlir
// SCHEDULED: braid.async on "comm" {
// SCHEDULED-NEXT: braid.reduce_scatter
// SCHEDULED: braid.cross_entropy
// SCHEDULED: braid.async on "comm" {
// SCHEDULED-NEXT: braid.reduce_scatter
// SCHEDULED: braid.await
// SCHEDULED: braid.cross_entropy

// With a run-time count (acco=1:2), each round runs on the communication
// stream as the authors run it, reduce-scatter -> the update on this rank's
// shard -> all-gather, in one async (the update's AdamW ops among them): the
// compute stream never waits for a reduce-scatter, and the second
// micro-batch waits only for the estimate's all-gathers.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm acco=1:2 -o %t/rounds.mlir --progress=false
// RUN: FileCheck %s --check-prefix=ROUNDS < %t/rounds.mlir
// ROUNDS: braid.async on "comm" {
// ROUNDS: braid.reduce_scatter {{.*}} {braid.round = 1 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>
// ROUNDS: braid.sqrt {{.*}} {braid.round = 1 : i64} : tensor<8x8xf32>
// ROUNDS: braid.all_gather {{.*}} {braid.round = 1 : i64} : tensor<8x8xf32> -> tensor<16x8xf32>
// ROUNDS-NOT: braid.await
// ROUNDS: braid.cross_entropy
// ROUNDS: braid.async on "comm" {
// ROUNDS: braid.reduce_scatter {{.*}} {braid.round = 2 : i64}
// ROUNDS: braid.sqrt {{.*}} {braid.round = 2 : i64}
// ROUNDS: braid.all_gather {{.*}} {braid.round = 2 : i64}
// ROUNDS: braid.await
// ROUNDS: braid.cross_entropy

// The simulator runs such a plan rank by rank when the ranks differ, in
// speed or in policy, and says how many optional micro-batches each ran.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm acco=1:2 -o %t/rounds.bplan --progress=false
// RUN: braid-run %t/rounds.bplan --backend sim --hw dgx-h100 --rank-speeds 1.5,1 | FileCheck %s --check-prefix=SIM-SLOW
// SIM-SLOW: every rank simulated (the plan has optional groups), the timeline below is rank 0's
// SIM-SLOW: optional groups run 2 of 2 on rank 1; 1 of 2 on rank 0 (dynamic)
// SIM-SLOW: ranks finish between
// RUN: braid-run %t/rounds.bplan --backend sim --hw dgx-h100 --optional-groups all,none | FileCheck %s --check-prefix=SIM-POLICIES
// SIM-POLICIES: optional groups run 2 of 2 on rank 0; 0 of 2 on rank 1 (policies per rank)

// The baseline: one synchronous step on N micro-batches, no pending state.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm accumulate=2 --overlap none -o %t/accumulate.mlir --progress=false
// RUN: FileCheck %s --check-prefix=ACCUMULATE < %t/accumulate.mlir
// ACCUMULATE-NOT: acco
// ACCUMULATE: braid.training = {batch = 4 : i64
// ACCUMULATE-SAME: steps = 2 : i64
// ACCUMULATE: braid.cross_entropy
// ACCUMULATE: braid.cross_entropy
// ACCUMULATE-COUNT-3: braid.reduce_scatter
// ACCUMULATE-COUNT-3: braid.all_gather

// braid-run: steps per call; a checkpoint holds every rank's pending
// gradients, so a run saved after 2 calls and resumed gives the same losses.
// RUN: braidc %t/tiny_lm.onnx --train --optimizer adamw --parallel dp=2 --algorithm acco=2 -o %t/m2.bplan --progress=false
// RUN: not %mpirun -n 2 braid-run %t/m2.bplan --steps 6 --data %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=STEPS
// STEPS: braid-run: error: --steps 6: the plan runs 4 steps per call (acco: two rounds of micro-batches), so --steps must be a multiple of 4
// RUN: %mpirun -n 2 braid-run %t/m2.bplan --steps 16 --data %t/tokens.bin --loss-log %t/whole.csv > /dev/null
// RUN: %mpirun -n 2 braid-run %t/m2.bplan --steps 8 --data %t/tokens.bin --loss-log %t/first.csv --save %t/step8.safetensors > /dev/null
// RUN: %mpirun -n 2 braid-run %t/m2.bplan --steps 16 --data %t/tokens.bin --loss-log %t/second.csv --resume %t/step8.safetensors > /dev/null
// RUN: tail -n +2 %t/second.csv > %t/second.rows
// RUN: cat %t/first.csv %t/second.rows > %t/resumed.csv
// RUN: diff %t/resumed.csv %t/whole.csv
// RUN: braid-run %t/m2.bplan --backend sim --hw dgx-h100 | FileCheck %s --check-prefix=SIM
// SIM: training plan: one call of 4 training steps simulated (acco, batch 4 x sequence 8 = 32 tokens per step)

// micro=auto: the fewest micro-batches whose compute covers a round's
// communication on the cost model (a remark says which and why).
// RUN: braidc %t/tiny_lm.onnx --train --parallel dp=2 --algorithm acco=auto --hw dgx-h100 -o %t/auto.bplan --progress=false 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO: remark: braid-acco: micro auto = {{[0-9]+}} (micro-batches per round; hw dgx-h100: one round's compute {{.*}} ms per micro-batch, its communication {{.*}} ms)
