// braid-schedule's prefetch window and memory limit on a ZeRO-3-shaped
// program: four layers, each a parameter shard all-gathered (4 MiB
// gathered) and a matmul + relu on 16 MiB of activations.
//
// prefetch=all: every gather issues at the start, and all four gathered
// parameters are live at once.
// RUN: braid-opt %s --braid-schedule="prefetch=all" --braid-to-exec=report-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=ALL-MEM
// RUN: braid-opt %s --braid-schedule="prefetch=all" | FileCheck %s --check-prefix=ALL
// ALL-MEM: remark: arena: 88080384 bytes
// ALL: braid.async on "comm"
// ALL-NEXT: braid.all_gather %arg1
// ALL: braid.async on "comm"
// ALL-NEXT: braid.all_gather %arg2
// ALL: braid.async on "comm"
// ALL-NEXT: braid.all_gather %arg3
// ALL: braid.async on "comm"
// ALL-NEXT: braid.all_gather %arg4
// ALL: braid.matmul

// prefetch=auto (the default): each gather issued while the layer before
// its reader runs (a matmul and its relu, fused into one kernel by
// braid-to-exec and so kept together: a gather issued between them would
// part them), the same estimated makespan, 4 MiB less memory.
// RUN: braid-opt %s --braid-schedule --braid-to-exec=report-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=AUTO-MEM
// RUN: braid-opt %s --braid-schedule | FileCheck %s --check-prefix=AUTO
// RUN: braid-opt %s --braid-schedule --braid-overlap-report=hw=dgx-h100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIME
// RUN: braid-opt %s --braid-schedule=prefetch=all --braid-overlap-report=hw=dgx-h100 -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIME
// RUN: braid-opt %s --braid-schedule --braid-to-exec | FileCheck %s --check-prefix=AUTO-FUSED
// RUN: braid-opt %s --braid-schedule --braid-to-exec | FileCheck %s --check-prefix=AUTO-UNFUSED
// AUTO-MEM: remark: arena: 83886080 bytes
// AUTO: %[[G0:.*]] = braid.async on "comm"
// AUTO-NEXT: braid.all_gather %arg1
// AUTO: %[[G1:.*]] = braid.async on "comm"
// AUTO-NEXT: braid.all_gather %arg2
// AUTO: braid.await %[[G0]]
// AUTO-NEXT: %[[M0:.*]] = braid.matmul %arg0
// AUTO-NEXT: braid.relu %[[M0]]
// AUTO-NEXT: braid.async on "comm"
// AUTO-NEXT: braid.all_gather %arg3 {{.*}} {braid.held_by_memory_limit}
// AUTO: braid.await %[[G1]]
// AUTO-NEXT: %[[M1:.*]] = braid.matmul
// AUTO-NEXT: braid.relu %[[M1]]
// AUTO-NEXT: braid.async on "comm"
// AUTO-NEXT: braid.all_gather %arg4
// AUTO-FUSED-COUNT-4: activation = "relu"
// AUTO-UNFUSED-NOT: exec.kernel "relu"
// TIME: remark: makespan 125.5 us

// memory-limit with prefetch=all: the largest window that fits. 85 MB
// lets two gathers run ahead (3 ops), the other two wait; the remark's
// bytes are the arena braid-to-exec builds.
// RUN: braid-opt %s --braid-schedule="prefetch=all memory-limit=85000000" --braid-to-exec=report-memory -o /dev/null 2>&1 | FileCheck %s --check-prefix=LIMIT
// RUN: braid-opt %s --braid-schedule="prefetch=all memory-limit=85000000" | FileCheck %s --check-prefix=LIMIT-ORDER
// LIMIT: remark: braid-schedule: @main needs [[PEAK:[0-9]+]] bytes per rank (memory-limit 85000000; 88080384 with unbounded prefetch): gathers issued at most 3 ops ahead of their first reader, 2 of 4 held back
// LIMIT: remark: arena: [[PEAK]] bytes
// LIMIT-ORDER: braid.all_gather %arg1
// LIMIT-ORDER-NEXT: braid.yield
// LIMIT-ORDER-NEXT: }
// LIMIT-ORDER-NEXT: braid.async on "comm"
// LIMIT-ORDER-NEXT: braid.all_gather %arg2
// LIMIT-ORDER: braid.matmul %arg0
// LIMIT-ORDER-NEXT: braid.relu
// LIMIT-ORDER-NEXT: braid.async on "comm"
// LIMIT-ORDER-NEXT: braid.all_gather %arg3 {{.*}} {braid.held_by_memory_limit}

// Limits that cannot be met, with what is needed.
// RUN: not braid-opt %s --braid-schedule="memory-limit=75000000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=FLOOR
// RUN: not braid-opt %s --braid-schedule="memory-limit=1000" -o /dev/null 2>&1 | FileCheck %s --check-prefix=PERSISTENT
// RUN: not braid-opt %s --braid-schedule="prefetch=some" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD
// FLOOR: error: braid-schedule: memory-limit 75000000 bytes cannot be met: @main needs 79691776 bytes per rank even with every gather issued just before its first reader (41943040 of them weights, optimizer state, constants, inputs and outputs; 88080384 with unbounded prefetch); braid-schedule does not reorder compute to save memory
// PERSISTENT: error: braid-schedule: memory-limit 1000 bytes cannot be met: @main's weights, optimizer state, constants, inputs and outputs alone take 41943040 bytes per rank
// BAD: error: braid-schedule: prefetch must be auto or all, not 'some'

braid.mesh @world(dp = 2)
func.func @main(%x: tensor<4096x1024xf32>, %w0: tensor<512x1024xf32>, %w1: tensor<512x1024xf32>, %w2: tensor<512x1024xf32>, %w3: tensor<512x1024xf32>) -> tensor<4096x1024xf32> {
  %g0 = braid.all_gather %w0 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h0 = braid.matmul %x, %g0 : (tensor<4096x1024xf32>, tensor<1024x1024xf32>) -> tensor<4096x1024xf32>
  %r0 = braid.relu %h0 : tensor<4096x1024xf32>
  %g1 = braid.all_gather %w1 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h1 = braid.matmul %r0, %g1 : (tensor<4096x1024xf32>, tensor<1024x1024xf32>) -> tensor<4096x1024xf32>
  %r1 = braid.relu %h1 : tensor<4096x1024xf32>
  %g2 = braid.all_gather %w2 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h2 = braid.matmul %r1, %g2 : (tensor<4096x1024xf32>, tensor<1024x1024xf32>) -> tensor<4096x1024xf32>
  %r2 = braid.relu %h2 : tensor<4096x1024xf32>
  %g3 = braid.all_gather %w3 on @world["dp"] dim 0 : tensor<512x1024xf32> -> tensor<1024x1024xf32>
  %h3 = braid.matmul %r2, %g3 : (tensor<4096x1024xf32>, tensor<1024x1024xf32>) -> tensor<4096x1024xf32>
  %r3 = braid.relu %h3 : tensor<4096x1024xf32>
  return %r3 : tensor<4096x1024xf32>
}
