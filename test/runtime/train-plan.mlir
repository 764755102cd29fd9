// braid-run --steps on a hand-written training plan (the exec IR below, see
// runtime/unittests/train/TrainingTest.cpp for its arithmetic): the loss
// log, checkpoints, resuming, int32 data, the shuffle, the simulator, and
// one clear error for each bad input, with no file left behind.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/train_files.py %t
// RUN: braid-translate --exec-to-plan %s -o %t/train.bplan --weights train.safetensors

// Ten steps, a checkpoint every four (after steps 4, 8 and 10).
// RUN: braid-run %t/train.bplan --steps 10 --data %t/tokens.bin --loss-log %t/loss.csv --save %t/ckpt.safetensors --save-every 4 | FileCheck %s --check-prefix=TRAIN
// RUN: FileCheck %s --check-prefix=LOG < %t/loss.csv
// RUN: count 11 < %t/loss.csv
// RUN: not test -e %t/loss.csv.partial
// RUN: not test -e %t/ckpt.safetensors.tmp
// RUN: FileCheck %s --check-prefix=CKPT < %t/ckpt.safetensors
// TRAIN: trained steps 0..9 (10 steps of 6 tokens) in {{.*}} s: {{.*}} steps/s, {{.*}} tokens/s; final loss {{.*}}
// TRAIN-NEXT: peak arena 2560 bytes per step (the plan's arena)
// TRAIN-NEXT: input pipeline: each next batch read on a second thread while its step ran
// TRAIN-NEXT: checkpoints: 3 in
// LOG: step,loss
// LOG-NEXT: 0,{{-?[0-9.e-]+$}}
// LOG: 9,{{-?[0-9.e-]+$}}
// The checkpoint holds the state weights (not lr) and says where to resume.
// CKPT-DAG: "braid_step":"10"
// CKPT-DAG: "braid_format":"1"
// CKPT-DAG: "braid_weights_file":"train.safetensors"
// CKPT-DAG: "w":{"data_offsets"
// CKPT-DAG: "m":{"data_offsets"
// CKPT-NOT: "lr"

// Five steps, then resumed to ten: the same last five losses, the same
// final state, bit for bit.
// RUN: braid-run %t/train.bplan --steps 5 --data %t/tokens.bin --save %t/half.safetensors > /dev/null
// RUN: braid-run %t/train.bplan --steps 10 --data %t/tokens.bin --resume %t/half.safetensors --loss-log %t/resumed.csv --save %t/resumed.safetensors | FileCheck %s --check-prefix=RESUMED
// RUN: tail -n 5 %t/loss.csv > %t/loss-tail.csv
// RUN: tail -n 5 %t/resumed.csv | diff - %t/loss-tail.csv
// RUN: head -n 2 %t/resumed.csv | FileCheck %s --check-prefix=RESUMEDLOG
// RUN: cmp %t/resumed.safetensors %t/ckpt.safetensors
// RESUMED: trained steps 5..9 (5 steps of 6 tokens)
// RESUMEDLOG: step,loss
// RESUMEDLOG-NEXT: 5,

// The same ids as int32 give the same run; a shuffle gives another.
// RUN: braid-run %t/train.bplan --steps 10 --data %t/tokens32.bin --data-dtype int32 --loss-log %t/loss32.csv > /dev/null
// RUN: diff %t/loss32.csv %t/loss.csv
// RUN: braid-run %t/train.bplan --steps 10 --data %t/tokens.bin --shuffle 7 --loss-log %t/shuffled.csv > /dev/null
// RUN: not diff -q %t/shuffled.csv %t/loss.csv > /dev/null

// The simulator runs one step of a training plan.
// Its peak memory is the plan's arena, the number the CPU run's summary
// prints.
// RUN: braid-run %t/train.bplan --backend sim --hw dgx-h100 > %t/sim.txt
// RUN: braid-run %t/train.bplan --steps 1 --data %t/tokens.bin >> %t/sim.txt
// RUN: FileCheck %s --check-prefix=SIM < %t/sim.txt
// SIM: training plan: one training step simulated (batch 2 x sequence 3 = 6 tokens)
// SIM: peak memory per rank (arena) [[ARENA:[0-9]+]] bytes ({{[0-9.]+}} MiB, {{[0-9.]+}}% of a GPU's 80 GB)
// SIM: peak arena [[ARENA]] bytes per step

// Bad data, checkpoints and outputs: one error each, before any file is
// written.
// RUN: not braid-run %t/train.bplan --steps 10 --data %t/short.bin --loss-log %t/never.csv --save %t/never.safetensors 2>&1 | FileCheck %s --check-prefix=SHORT
// RUN: not test -e %t/never.csv
// RUN: not test -e %t/never.csv.partial
// RUN: not test -e %t/never.safetensors
// RUN: not test -e %t/never.safetensors.tmp
// SHORT: braid-run: error: data file '{{.*}}short.bin' holds 20 tokens, 6 windows of 3 + 1 tokens; 10 steps of batch 2 need 20 windows, at least 61 tokens
// RUN: not braid-run %t/train.bplan --steps 2 --data %t/odd.bin 2>&1 | FileCheck %s --check-prefix=ODD
// ODD: braid-run: error: data file '{{.*}}odd.bin' has 7 bytes, not a whole number of uint16 token ids (2 bytes each); is --data-dtype right?
// RUN: not braid-run %t/train.bplan --steps 2 --data %t/missing.bin 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: braid-run: error: cannot open data file '{{.*}}missing.bin': No such file or directory
// RUN: not braid-run %t/train.bplan --steps 2 --data %t/outside.bin --loss-log %t/outside.csv 2>&1 | FileCheck %s --check-prefix=OUTSIDE
// RUN: not test -e %t/outside.csv
// OUTSIDE: braid-run: error: rank 0, stream 'compute', instruction 4 (gather at loc({{.*}})): {{.*}}index 40 is out of range for dimension 0 of size 16
// RUN: not braid-run %t/train.bplan --steps 10 --data %t/tokens.bin --resume %t/other.safetensors 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: braid-run: error: checkpoint '{{.*}}other.safetensors' has no tensor 'w' (the plan's state weight is f32 [16, 4]): a checkpoint of another plan?
// RUN: not braid-run %t/train.bplan --steps 10 --data %t/tokens.bin --resume %t/train.safetensors 2>&1 | FileCheck %s --check-prefix=NOTCKPT
// NOTCKPT: braid-run: error: checkpoint '{{.*}}train.safetensors' has no braid_format "1" in its metadata: it was not written by braid-run --save
// RUN: not braid-run %t/train.bplan --steps 5 --data %t/tokens.bin --resume %t/ckpt.safetensors 2>&1 | FileCheck %s --check-prefix=DONE
// RUN: not braid-run %t/train.bplan --steps 5 --data %t/tokens.bin --resume %t/nothing.safetensors 2>&1 | FileCheck %s --check-prefix=NOCKPT
// NOCKPT: braid-run: error: cannot open checkpoint '{{.*}}nothing.safetensors': No such file or directory
// RUN: not braid-run %t/train.bplan --steps 5 --data %t/tokens.bin --resume %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=BADCKPT
// BADCKPT: braid-run: error: checkpoint '{{.*}}tokens.bin'{{.*}}
// DONE: braid-run: error: checkpoint '{{.*}}ckpt.safetensors' resumes at step 10, but --steps 5 ends before it
// RUN: not braid-run %t/train.bplan --steps 2 --data %t/tokens.bin --save %t/nofolder/c.safetensors 2>&1 | FileCheck %s --check-prefix=NOSAVE
// NOSAVE: braid-run: error: cannot create '{{.*}}nofolder/c.safetensors.tmp': No such file or directory
// A checkpoint and a loss log to a device (here through links to /dev/null)
// are written in place: a temporary renamed over the path would replace
// the link (and given /dev/null itself, as root, the device).
// RUN: ln -sf /dev/null %t/devnull.safetensors && ln -sf /dev/null %t/devnull.csv
// RUN: braid-run %t/train.bplan --steps 2 --data %t/tokens.bin --save %t/devnull.safetensors --loss-log %t/devnull.csv > /dev/null
// RUN: test -L %t/devnull.safetensors && test -L %t/devnull.csv

// A plan without a training section.
// RUN: sed -e 's/ training {[^}]*}//' %s > %t/forward.mlir
// RUN: braid-translate --exec-to-plan %t/forward.mlir -o %t/forward.bplan --weights train.safetensors
// RUN: not braid-run %t/forward.bplan --weights %t/train.safetensors --steps 2 --data %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=FORWARD
// FORWARD: braid-run: error: the plan is not a training plan (it has no training section); --steps runs plans compiled with braidc --train

// Options that do not go together.
// RUN: not braid-run %t/train.bplan --data %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=NOSTEPS
// NOSTEPS: braid-run: error: --data needs --steps (a training run)
// RUN: not braid-run %t/train.bplan --steps 3 2>&1 | FileCheck %s --check-prefix=NODATA
// NODATA: braid-run: error: --steps needs --data FILE (the token ids to train on)
// RUN: not braid-run %t/train.bplan --steps 3 --data %t/tokens.bin --save-every 2 2>&1 | FileCheck %s --check-prefix=EVERY
// EVERY: braid-run: error: --save-every needs --save FILE
// RUN: not braid-run %t/train.bplan --steps 0 --data %t/tokens.bin 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: braid-run: error: --steps needs a whole number from 1, got '0'
// RUN: not braid-run %t/train.bplan --steps 3 --data %t/tokens.bin --data-dtype u8 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: braid-run: error: --data-dtype needs uint16 or int32, got 'u8'
// RUN: not braid-run %t/train.bplan --steps 3 --data %t/tokens.bin --repeat 2 2>&1 | FileCheck %s --check-prefix=REPEAT
// REPEAT: braid-run: error: --outputs, --expected and --repeat do not apply to a training run (--steps): it writes --loss-log and --save
// RUN: not braid-run %t/train.bplan --steps 3 --data %t/tokens.bin --input tokens=%t/x.npy 2>&1 | FileCheck %s --check-prefix=FILLED
// FILLED: braid-run: error: --input tokens: a training run fills 'tokens' from --data

module {
  exec.plan @main mesh(["tp"], [1]) arena 2560 events 0 training {batch = 2 : i64, labels = "labels", loss = "loss", sequence = 3 : i64, tokens = "tokens"} {
    exec.buffer @b0 offset 0 : tensor<2x3xi64>
    exec.buffer @b1 offset 64 : tensor<2x3xi64>
    exec.buffer @b2 offset 128 : tensor<16x4xf32>
    exec.buffer @b3 offset 384 : tensor<16x4xf32>
    exec.buffer @b4 offset 640 : tensor<f32>
    exec.buffer @b5 offset 704 : tensor<f32>
    exec.buffer @b6 offset 768 : tensor<2x3xf32>
    exec.buffer @b7 offset 832 : tensor<2x3xf32>
    exec.buffer @b8 offset 896 : tensor<2x3x4xf32>
    exec.buffer @b9 offset 1024 : tensor<f32>
    exec.buffer @b10 offset 1088 : tensor<f32>
    exec.buffer @b11 offset 1152 : tensor<f32>
    exec.buffer @b12 offset 1216 : tensor<f32>
    exec.buffer @b13 offset 1280 : tensor<16x4xf32>
    exec.buffer @b14 offset 1536 : tensor<16x4xf32>
    exec.buffer @b15 offset 1792 : tensor<16x4xf32>
    exec.buffer @b16 offset 2048 : tensor<16x4xf32>
    exec.buffer @b17 offset 2304 : tensor<16x4xf32>
    exec.input "tokens" @b0
    exec.input "labels" @b1
    exec.weight "w" @b2 full [16, 4] sharding [[], ["tp"]] state
    exec.weight "m" @b3 full [16, 4] sharding [[], ["tp"]] init "zeros" state
    exec.weight "lr" @b4 full [] sharding []
    exec.constant @b5 dense<5.000000e-01> : tensor<f32>
    exec.output "loss" @b12
    exec.stream "compute" {
      exec.kernel "cast"([@b0]) -> ([@b6]) {} flops 6 bytes 72
      exec.kernel "cast"([@b1]) -> ([@b7]) {} flops 6 bytes 72
      exec.kernel "reduce_mean"([@b6]) -> ([@b9]) {dims = array<i64: 0, 1>} flops 6 bytes 28
      exec.kernel "reduce_mean"([@b7]) -> ([@b10]) {dims = array<i64: 0, 1>} flops 6 bytes 28
      exec.kernel "gather"([@b2, @b0]) -> ([@b8]) {axis = 0 : i64} flops 0 bytes 144
      exec.kernel "reduce_mean"([@b8]) -> ([@b11]) {dims = array<i64: 0, 1, 2>} flops 24 bytes 100
      exec.collective "all_reduce" @b11 -> @b12 on ["tp"] {reduction = "avg"}
      exec.kernel "mul"([@b3, @b5]) -> ([@b13]) {} flops 64 bytes 516
      exec.kernel "add"([@b13, @b9]) -> ([@b14]) {} flops 64 bytes 516
      exec.kernel "mul"([@b14, @b4]) -> ([@b15]) {} flops 64 bytes 516
      exec.kernel "mul"([@b15, @b10]) -> ([@b16]) {} flops 64 bytes 516
      exec.kernel "sub"([@b2, @b16]) -> ([@b17]) {} flops 64 bytes 768
      exec.kernel "copy"([@b14]) -> ([@b3]) {} flops 0 bytes 512
      exec.kernel "copy"([@b17]) -> ([@b2]) {} flops 0 bytes 512
    }
  }
}
