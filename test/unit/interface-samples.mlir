// One sample of every braid op that implements the dimension-mapping and cost
// interfaces, with the values worked out by hand:
//   expected_mapping: DimensionMapping::print of the op
//   expected_flops:   CostOpInterface::getFlops
//   expected_bytes:   CostOpInterface::getMinBytes (f32 = 4 B, i64 = 8 B, i1 = 1 B)
// InterfacesTest.cpp checks each, and fails for a registered op with no sample.

braid.mesh @world(tp = 2)
braid.weight @w : tensor<16x32xf32>

func.func @samples(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>,
                   %m: tensor<4x8xi1>, %s: tensor<f32>, %x: tensor<2x8x16xf32>,
                   %q4: tensor<2x4x8x16xf32>, %table: tensor<100x16xf32>,
                   %ids: tensor<2x8xi64>, %x64: tensor<2x8x64xf32>,
                   %x4d: tensor<2x8x4x16xf32>, %x64b: tensor<6x4xf32>,
                   %row: tensor<1x8xf32>, %g32: tensor<32x32xf32>,
                   %x816: tensor<8x16xf32>, %o: index,
                   %a3: tensor<2x4x16xf32>, %x48: tensor<2x8x48xf32>,
                   %col: tensor<8x1xf32>, %kv: tensor<2x2x8x16xf32>,
                   %q1: tensor<1x2x8x16xf32>, %mask: tensor<1x1x8x8xi1>,
                   %k1: tensor<1x2x4x16xf32>, %l1: tensor<1x2x8xf32>,
                   %logits: tensor<16x8xf32>, %tok: tensor<16x64xf32>,
                   %experts: tensor<16x2xi64>, %weights: tensor<16x2xf32>,
                   %buf: tensor<8x8x64xf32>, %w1: tensor<8x64x128xf32>,
                   %cls: tensor<16x100xf32>, %labels: tensor<16xi64>,
                   %a2a: tensor<8x4x16xf32>, %lhs: tensor<2x8x16xf32>,
                   %w2: tensor<16x32xf32>, %g: tensor<16xf32>,
                   %cs: tensor<8x16xf32>, %a3s: tensor<2x3x4xf32>,
                   %ids3: tensor<3xi64>) {
  %gw = braid.get_weight @w {expected_mapping = "() -> ([f0, f1]) {f0 = 16, f1 = 32}", expected_flops = 0, expected_bytes = 0} : tensor<16x32xf32>

  // Unary: 32 elements, 128 B in and 128 B out.
  %u0 = braid.neg %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u1 = braid.exp %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u2 = braid.log %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u3 = braid.sqrt %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u4 = braid.rsqrt %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 64, expected_bytes = 256} : tensor<4x8xf32>
  %u5 = braid.tanh %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u6 = braid.erf %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u7 = braid.sigmoid %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 96, expected_bytes = 256} : tensor<4x8xf32>
  %u8 = braid.silu %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 128, expected_bytes = 256} : tensor<4x8xf32>
  %u9 = braid.relu %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 256} : tensor<4x8xf32>
  %u10 = braid.gelu %a tanh {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 256, expected_bytes = 256} : tensor<4x8xf32>

  // Binary with a broadcast [8] operand: (32 + 8 + 32) * 4 B.
  %b0 = braid.add %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b1 = braid.sub %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // A size-1 dimension broadcast against 8 maps to no factor.
  %b2 = braid.mul %a, %c {expected_mapping = "([f0, f1], [f0, _]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 272} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %b3 = braid.div %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b4 = braid.pow %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 64, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b5 = braid.max %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b6 = braid.min %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 288} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // i1 result: 128 + 32 + 32 B.
  %cmp = braid.compare lt, %a, %b {expected_mapping = "([f0, f1], [f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 192} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // Rank-0 operand: no dimensions. 32 + 128 + 4 + 128 B.
  %sel = braid.select %m, %a, %s {expected_mapping = "([f0, f1], [f0, f1], -) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 292} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // 128 B f32 in, 64 B bf16 out.
  %cast = braid.cast %a {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 32, expected_bytes = 192} : tensor<4x8xf32> -> tensor<4x8xbf16>

  // 2 * (2*8*32) * 16 flops; (256 + 512 + 512) * 4 B.
  %mm = braid.matmul %lhs, %w2 {expected_mapping = "([f0, f1, f3], [f3, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 32, f3 = 16 sum}", expected_flops = 16384, expected_bytes = 5120} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  // Q K^T: 2 * (2*4*8*8) * 16 flops; (1024 + 1024 + 512) * 4 B.
  %qk = braid.matmul %q4, %q4 transpose_rhs {expected_mapping = "([f0, f1, f2, f4], [f0, f1, f3, f4]) -> ([f0, f1, f2, f3]) {f0 = 2, f1 = 4, f2 = 8, f3 = 8, f4 = 16 sum}", expected_flops = 16384, expected_bytes = 10240} : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>

  %r0 = braid.reduce_sum %a dims [1] keep_dims {expected_mapping = "([f0, f1]) -> ([f0, _]) {f0 = 4, f1 = 8 sum}", expected_flops = 32, expected_bytes = 144} : tensor<4x8xf32> -> tensor<4x1xf32>
  %r1 = braid.reduce_mean %a dims [0] {expected_mapping = "([f0, f1]) -> ([f1]) {f0 = 4 avg, f1 = 8}", expected_flops = 32, expected_bytes = 160} : tensor<4x8xf32> -> tensor<8xf32>
  %r2 = braid.reduce_max %a dims [0, 1] {expected_mapping = "([f0, f1]) -> (-) {f0 = 4 max, f1 = 8 max}", expected_flops = 32, expected_bytes = 132} : tensor<4x8xf32> -> tensor<f32>

  // 5 flops per element of 512; 2 * 512 * 4 B.
  %sm = braid.softmax %q4 dim 3 {expected_mapping = "([f0, f1, f2, f3]) -> ([f0, f1, f2, f3]) {f0 = 2, f1 = 4, f2 = 8, f3 = 16 whole}", expected_flops = 5120, expected_bytes = 8192} : tensor<2x4x8x16xf32>
  // 8 * 256 flops; (256 + 16 + 16 + 256) * 4 B.
  %ln = braid.layer_norm %x, %g, %g axis 2 eps 1.0e-05 {expected_mapping = "([f0, f1, f2], [f2], [f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 16 whole}", expected_flops = 2048, expected_bytes = 2176} : (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %rms = braid.rms_norm %x, %g axis 2 eps 1.0e-06 {expected_mapping = "([f0, f1, f2], [f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 16 whole}", expected_flops = 1024, expected_bytes = 2112} : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  // Normalizing the last two dimensions: both whole.
  %ln2 = braid.layer_norm %x, %cs axis 1 eps 1.0e-05 {expected_mapping = "([f0, f1, f2], [f1, f2]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8 whole, f2 = 16 whole}", expected_flops = 2048, expected_bytes = 2560} : (tensor<2x8x16xf32>, tensor<8x16xf32>) -> tensor<2x8x16xf32>
  // 3 * 1024 flops; (1024 + 128 + 128 + 1024) * 4 B.
  %rot = braid.rotary %q4, %cs, %cs {expected_mapping = "([f0, f1, f2, f3], [f2, f3], [f2, f3]) -> ([f0, f1, f2, f3]) {f0 = 2, f1 = 4, f2 = 8, f3 = 16 whole}", expected_flops = 3072, expected_bytes = 9216} : (tensor<2x4x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8x16xf32>

  // Indices 128 B, rows read 1024 B, result 1024 B.
  %emb = braid.gather %table[%ids] axis 0 {expected_mapping = "([f0, f1], [f2, f3]) -> ([f2, f3, f1]) {f0 = 100 whole, f1 = 16, f2 = 2, f3 = 8}", expected_flops = 0, expected_bytes = 2176} : (tensor<100x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
  // Gather's transpose: the tokens are summed over, the rows needed whole.
  // One add per update (256); updates 1024 B, indices 128 B, result 6400 B.
  %demb = braid.scatter_add %emb[%ids] axis 0 {expected_mapping = "([f2, f3, f1], [f2, f3]) -> ([f0, f1]) {f0 = 100 whole, f1 = 16, f2 = 2 sum, f3 = 8 sum}", expected_flops = 256, expected_bytes = 7552} : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<100x16xf32>
  // Along a middle axis: the outer and inner dimensions stay parallel.
  // 2 * 3 * 4 adds; updates 96 B, indices 24 B, result 2 * 5 * 4 * 4 = 160 B.
  %dmid = braid.scatter_add %a3s[%ids3] axis 1 {expected_mapping = "([f0, f3, f2], [f3]) -> ([f0, f1, f2]) {f0 = 2, f1 = 5 whole, f2 = 4, f3 = 3 sum}", expected_flops = 24, expected_bytes = 280} : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<2x5x4xf32>

  // A split of one dimension into two shares factors exactly.
  %rs0 = braid.reshape %x64 {expected_mapping = "([f0, f1, (f2 f3)]) -> ([f0, f1, f2, f3]) {f0 = 2, f1 = 8, f2 = 4, f3 = 16}", expected_flops = 0, expected_bytes = 0} : tensor<2x8x64xf32> -> tensor<2x8x4x16xf32>
  %rs1 = braid.reshape %x4d {expected_mapping = "([f0, f1, f2, f3]) -> ([(f0 f1), (f2 f3)]) {f0 = 2, f1 = 8, f2 = 4, f3 = 16}", expected_flops = 0, expected_bytes = 0} : tensor<2x8x4x16xf32> -> tensor<16x64xf32>
  // 6x4 -> 4x6 has no factor-preserving grouping: the input is needed whole,
  // and no block of the result is a reshape of a block of it.
  %rs2 = braid.reshape %x64b {expected_mapping = "([f0, f1]) -> ([f2, f3]) {f0 = 6 whole, f1 = 4 whole, f2 = 4 whole, f3 = 6 whole}", expected_flops = 0, expected_bytes = 0} : tensor<6x4xf32> -> tensor<4x6xf32>
  %rs3 = braid.reshape %row {expected_mapping = "([_, f0]) -> ([f0]) {f0 = 8}", expected_flops = 0, expected_bytes = 0} : tensor<1x8xf32> -> tensor<8xf32>

  %tr = braid.transpose %x4d [0, 2, 1, 3] {expected_mapping = "([f0, f1, f2, f3]) -> ([f0, f2, f1, f3]) {f0 = 2, f1 = 8, f2 = 4, f3 = 16}", expected_flops = 0, expected_bytes = 8192} : tensor<2x8x4x16xf32> -> tensor<2x4x8x16xf32>

  // Reads and writes only the 8x32 box.
  %sl0 = braid.slice %g32 offsets [0, 0] sizes [8, 32] strides [1, 1] {expected_mapping = "([f0, f2]) -> ([f1, f2]) {f0 = 32 whole, f1 = 8, f2 = 32}", expected_flops = 0, expected_bytes = 2048} : tensor<32x32xf32> -> tensor<8x32xf32>
  %sl1 = braid.slice %x816 offsets [0, %o] sizes [8, 8] strides [1, 1] {expected_mapping = "([f0, f1], -) -> ([f0, f2]) {f0 = 8, f1 = 16 whole, f2 = 8}", expected_flops = 0, expected_bytes = 512} : tensor<8x16xf32> -> tensor<8x8xf32>

  %cat = braid.concat %a3, %a3 dim 1 {expected_mapping = "([f0, f3, f1], [f0, f4, f1]) -> ([f0, f2, f1]) {f0 = 2, f1 = 16, f2 = 8, f3 = 4 whole, f4 = 4 whole}", expected_flops = 0, expected_bytes = 2048} : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %sp:3 = braid.split %x48 dim 2 {expected_mapping = "([f0, f1, f2]) -> ([f0, f1, f3], [f0, f1, f4], [f0, f1, f5]) {f0 = 2, f1 = 8, f2 = 48 whole, f3 = 16, f4 = 16, f5 = 16}", expected_flops = 0, expected_bytes = 6144} : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
  %bc = braid.broadcast_to %col {expected_mapping = "([f1, _]) -> ([f0, f1, f2]) {f0 = 2, f1 = 8, f2 = 16}", expected_flops = 0, expected_bytes = 1056} : tensor<8x1xf32> -> tensor<2x8x16xf32>
  %cst = braid.constant {expected_mapping = "() -> ([f0]) {f0 = 4}", expected_flops = 0, expected_bytes = 16} dense<1.0> : tensor<4xf32>

  // Grouped-query causal attention, 4 query heads over 2 key/value heads.
  // 36 scored pairs (1 + 2 + ... + 8); 2 * 4 * 36 * (2*16 + 5 + 2*16) flops.
  %att = braid.attention %q4, %kv, %kv causal scale 2.500000e-01 {expected_mapping = "([f0, (f1 f2), f3, f5], [f0, f1, f4, f5], [f0, f1, f4, f6]) -> ([f0, (f1 f2), f3, f6]) {f0 = 2, f1 = 2, f2 = 2, f3 = 8, f4 = 8 causal(f3), f5 = 16 whole, f6 = 16}", expected_flops = 19872, expected_bytes = 12288} : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x16xf32>
  // Masked, not causal: all 64 pairs; 1 * 2 * 64 * 69 flops; mask 64 B.
  %attm = braid.attention %q1, %q1, %q1 mask %mask scale 2.500000e-01 {expected_mapping = "([f0, (f1 f2), f3, f5], [f0, f1, f4, f5], [f0, f1, f4, f6], [f0, _, f3, f4]) -> ([f0, (f1 f2), f3, f6]) {f0 = 1, f1 = 2, f2 = 1, f3 = 8, f4 = 8 whole, f5 = 16 whole, f6 = 16}", expected_flops = 8832, expected_bytes = 4160} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x8xi1>) -> tensor<1x2x8x16xf32>
  // Offset -2 over 4 keys: rows see 0,0,1,2,3,4,4,4 keys = 18 pairs.
  %off = arith.constant -2 : index
  %ap:2 = braid.attention_partial %q1, %k1, %k1 causal offset %off scale 2.500000e-01 {expected_mapping = "([f0, (f1 f2), f3, f5], [f0, f1, f4, f5], [f0, f1, f4, f6], -) -> ([f0, (f1 f2), f3, f6], [f0, (f1 f2), f3]) {f0 = 1, f1 = 2, f2 = 1, f3 = 8, f4 = 4 causal(f3), f5 = 16 whole, f6 = 16}", expected_flops = 2484, expected_bytes = 3136} : (tensor<1x2x8x16xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, index) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)
  // 3 * 2 * 256 + (2*2 + 1) * 16 flops.
  %am:2 = braid.attention_merge %q1, %q1 lse %l1, %l1 {expected_mapping = "([f0, f1, f2, f3], [f0, f1, f2, f3], [f0, f1, f2], [f0, f1, f2]) -> ([f0, f1, f2, f3], [f0, f1, f2]) {f0 = 1, f1 = 2, f2 = 8, f3 = 16}", expected_flops = 1616, expected_bytes = 3264} : (tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>) -> (tensor<1x2x8x16xf32>, tensor<1x2x8xf32>)

  // (5 + 2) * 128 flops; 512 + 128 + 256 B.
  %rt:2 = braid.router_topk %logits k 2 normalize {expected_mapping = "([f0, f1]) -> ([f0, f2], [f0, f2]) {f0 = 16, f1 = 8 whole, f2 = 2}", expected_flops = 896, expected_bytes = 896} : (tensor<16x8xf32>) -> (tensor<16x2xf32>, tensor<16x2xi64>)
  %dsp = braid.moe_dispatch %tok, %experts {expected_mapping = "([f2, f3], [f2, f4]) -> ([f0, f1, f3]) {f0 = 8, f1 = 8, f2 = 16 whole, f3 = 64, f4 = 2 whole}", expected_flops = 0, expected_bytes = 20736} : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x8x64xf32>
  // Top-k experts are distinct per token and 16 slots hold every token: a
  // block of tokens fills a block of slots (routed); 4096 + 256 + 32768 B.
  %dspr = braid.moe_dispatch %tok, %rt#1 {expected_mapping = "([f2, f3], [f2, f4]) -> ([f0, f1, f3]) {f0 = 8, f1 = 16, f2 = 16 routed(f1), f3 = 64, f4 = 2 whole}", expected_flops = 0, expected_bytes = 37120} : (tensor<16x64xf32>, tensor<16x2xi64>) -> tensor<8x16x64xf32>
  // 2 * 1024 * 2 flops; 32768 + 256 + 128 + 4096 B.
  %cmbr = braid.moe_combine %dspr, %rt#1, %rt#0 {expected_mapping = "([f0, f1, f2], [f3, f4], [f3, f4]) -> ([f3, f2]) {f0 = 8 whole, f1 = 16 whole, f2 = 64, f3 = 16 routed(f1), f4 = 2 whole}", expected_flops = 4096, expected_bytes = 37248} : (tensor<8x16x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>
  // 2 * (8*8*128) * 64 flops.
  %gmm = braid.grouped_matmul %buf, %w1 {expected_mapping = "([f0, f1, f3], [f0, f3, f2]) -> ([f0, f1, f2]) {f0 = 8, f1 = 8, f2 = 128, f3 = 64 sum}", expected_flops = 1048576, expected_bytes = 311296} : (tensor<8x8x64xf32>, tensor<8x64x128xf32>) -> tensor<8x8x128xf32>
  // 2 * 1024 * 2 flops; 16384 + 256 + 128 + 4096 B.
  %cmb = braid.moe_combine %buf, %experts, %weights {expected_mapping = "([f0, f1, f2], [f3, f4], [f3, f4]) -> ([f3, f2]) {f0 = 8 whole, f1 = 8 whole, f2 = 64, f3 = 16 whole, f4 = 2 whole}", expected_flops = 4096, expected_bytes = 20864} : (tensor<8x8x64xf32>, tensor<16x2xi64>, tensor<16x2xf32>) -> tensor<16x64xf32>

  %ce0 = braid.cross_entropy %cls, %labels mean {expected_mapping = "([f0, f1], [f0]) -> (-) {f0 = 16 avg, f1 = 100 whole}", expected_flops = 8000, expected_bytes = 6532} : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<f32>
  %ce1 = braid.cross_entropy %cls, %labels none {expected_mapping = "([f0, f1], [f0]) -> ([f0]) {f0 = 16, f1 = 100 whole}", expected_flops = 8000, expected_bytes = 6592} : (tensor<16x100xf32>, tensor<16xi64>) -> tensor<16xf32>

  // Collectives do no compute-roofline flops; bytes are input plus result.
  %ar = braid.all_reduce %a on @world["tp"] sum {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 0, expected_bytes = 256} : tensor<4x8xf32>
  %ag = braid.all_gather %a on @world["tp"] dim 0 {expected_mapping = "([f0, f2]) -> ([f1, f2]) {f0 = 4 whole, f1 = 8, f2 = 8}", expected_flops = 0, expected_bytes = 384} : tensor<4x8xf32> -> tensor<8x8xf32>
  %rsc = braid.reduce_scatter %a on @world["tp"] sum dim 1 {expected_mapping = "([f0, f1]) -> ([f0, f2]) {f0 = 4, f1 = 8 whole, f2 = 4}", expected_flops = 0, expected_bytes = 192} : tensor<4x8xf32> -> tensor<4x4xf32>
  %a2 = braid.all_to_all %a2a on @world["tp"] split 0 concat 1 {expected_mapping = "([f0, f2, f4]) -> ([f1, f3, f4]) {f0 = 8 whole, f1 = 4, f2 = 4 whole, f3 = 8, f4 = 16}", expected_flops = 0, expected_bytes = 4096} : tensor<8x4x16xf32> -> tensor<4x8x16xf32>
  %cp = braid.collective_permute %a on @world["tp"] shift 1 {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 0, expected_bytes = 256} : tensor<4x8xf32>
  %bcast = braid.broadcast %a on @world["tp"] root 0 {expected_mapping = "([f0, f1]) -> ([f0, f1]) {f0 = 4, f1 = 8}", expected_flops = 0, expected_bytes = 256} : tensor<4x8xf32>
  return
}
