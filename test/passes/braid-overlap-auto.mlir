// RUN: braid-opt %s --braid-partition=cp=8 --braid-overlap-auto=hw=dgx-h100 | FileCheck %s
// RUN: braid-opt %s --braid-partition=cp=8 --braid-overlap-auto=hw=rtx4090-pcie | FileCheck %s --check-prefix=PCIE

// A long causal attention split over 8 ranks: the cost model prefers
// exchanging K/V blocks under partial attention to gathering them whole.
// CHECK: module attributes {braid.explain = [{candidates = [{estimate_us = {{.*}}, name = "schedule"}{{.*}}chosen = "[[CHOICE:ring|attention-2d=[0-9]+x[0-9]+]]", function = "main", hw = "dgx-h100", pass = "braid-overlap-auto"}], braid.overlap_choice = "[[CHOICE]]"}
// CHECK-NOT: braid.all_gather %{{.*}} dim 2
// CHECK: braid.attention_merge
// PCIE: module attributes {braid.explain = [{{.*}}chosen = "[[CHOICE:ring|attention-2d=[0-9]+x[0-9]+]]"{{.*}}], braid.overlap_choice = "[[CHOICE]]"}
func.func @main(%q: tensor<1x16384x32x128xbf16>, %k: tensor<1x16384x32x128xbf16>, %v: tensor<1x16384x32x128xbf16>) -> tensor<bf16> {
  %qt = braid.transpose %q [0, 2, 1, 3] : tensor<1x16384x32x128xbf16> -> tensor<1x32x16384x128xbf16>
  %kt = braid.transpose %k [0, 2, 1, 3] : tensor<1x16384x32x128xbf16> -> tensor<1x32x16384x128xbf16>
  %vt = braid.transpose %v [0, 2, 1, 3] : tensor<1x16384x32x128xbf16> -> tensor<1x32x16384x128xbf16>
  %o = braid.attention %qt, %kt, %vt causal scale 0.08838835 : (tensor<1x32x16384x128xbf16>, tensor<1x32x16384x128xbf16>, tensor<1x32x16384x128xbf16>) -> tensor<1x32x16384x128xbf16>
  %r = braid.reduce_sum %o dims [0, 1, 2, 3] : tensor<1x32x16384x128xbf16> -> tensor<bf16>
  return %r : tensor<bf16>
}
