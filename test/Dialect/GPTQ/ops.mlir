// RUN: gptq-opt %s -split-input-file | gptq-opt -split-input-file | FileCheck %s
// RUN: gptq-opt %s -split-input-file --mlir-print-op-generic | gptq-opt -split-input-file | FileCheck %s
// RUN: gptq-opt %s -split-input-file --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// Round trips of every gptq op, in its custom and its generic form, with
// static and dynamic shapes and with optional operands present and absent.

// CHECK-LABEL: func.func @hessian_accumulate_batch
// CHECK-SAME: (%[[X:.+]]: tensor<8x16x64xf32>, %[[H:.+]]: tensor<64x64xf32>, %[[N:.+]]: i64)
// CHECK: %[[R:[^ ,]+]], %[[C:[^ ,]+]] = gptq.hessian_accumulate %[[X]] into %[[H]] count %[[N]] : tensor<8x16x64xf32>, tensor<64x64xf32>
// CHECK: return %[[R]], %[[C]] : tensor<64x64xf32>, i64
// GENERIC-LABEL: sym_name = "hessian_accumulate_batch"
// GENERIC: "gptq.hessian_accumulate"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<8x16x64xf32>, tensor<64x64xf32>, i64) -> (tensor<64x64xf32>, i64)
func.func @hessian_accumulate_batch(%x: tensor<8x16x64xf32>, %h: tensor<64x64xf32>, %n: i64) -> (tensor<64x64xf32>, i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<8x16x64xf32>, tensor<64x64xf32>
  return %h1, %n1 : tensor<64x64xf32>, i64
}

// -----

// CHECK-LABEL: func.func @hessian_accumulate_dynamic
// CHECK: gptq.hessian_accumulate %{{.*}} into %{{.*}} count %{{.*}} : tensor<?x?xf32>, tensor<?x?xf32>
// CHECK: gptq.hessian_accumulate %{{.*}} into %{{.*}} count %{{.*}} : tensor<?x?x?xf32>, tensor<?x?xf32>
// CHECK: gptq.hessian_accumulate %{{.*}} into %{{.*}} count %{{.*}} : tensor<16x32xf32>, tensor<?x32xf32>
func.func @hessian_accumulate_dynamic(%x: tensor<?x?xf32>, %x3: tensor<?x?x?xf32>, %xs: tensor<16x32xf32>, %h: tensor<?x?xf32>, %hs: tensor<?x32xf32>, %n: i64) -> (tensor<?x?xf32>, tensor<?x32xf32>, i64) {
  %h1, %n1 = gptq.hessian_accumulate %x into %h count %n : tensor<?x?xf32>, tensor<?x?xf32>
  %h2, %n2 = gptq.hessian_accumulate %x3 into %h1 count %n1 : tensor<?x?x?xf32>, tensor<?x?xf32>
  %h3, %n3 = gptq.hessian_accumulate %xs into %hs count %n2 : tensor<16x32xf32>, tensor<?x32xf32>
  return %h2, %h3, %n3 : tensor<?x?xf32>, tensor<?x32xf32>, i64
}

// -----

// CHECK-LABEL: func.func @damped_cholesky
// CHECK-SAME: (%[[H:.+]]: tensor<64x64xf32>, %[[D:.+]]: tensor<?x?xf32>, %[[P:.+]]: f32)
// CHECK: %[[U:.+]], %[[OK:.+]] = gptq.damped_cholesky %[[H]] percdamp(%[[P]]) : tensor<64x64xf32>
// CHECK: gptq.damped_cholesky %[[D]] percdamp(%[[P]]) : tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "damped_cholesky"
// GENERIC: "gptq.damped_cholesky"(%{{.*}}, %{{.*}}) : (tensor<64x64xf32>, f32) -> (tensor<64x64xf32>, i1)
func.func @damped_cholesky(%h: tensor<64x64xf32>, %d: tensor<?x?xf32>, %p: f32) -> (tensor<64x64xf32>, i1, tensor<?x?xf32>, i1) {
  %u, %ok = gptq.damped_cholesky %h percdamp(%p) : tensor<64x64xf32>
  %ud, %okd = gptq.damped_cholesky %d percdamp(%p) : tensor<?x?xf32>
  return %u, %ok, %ud, %okd : tensor<64x64xf32>, i1, tensor<?x?xf32>, i1
}

// -----

// CHECK-LABEL: func.func @act_order
// CHECK: gptq.act_order %{{.*}} : tensor<64x64xf32> -> tensor<64xi64>
// CHECK: gptq.act_order %{{.*}} : tensor<?x?xf32> -> tensor<?xi64>
// CHECK: gptq.act_order %{{.*}} : tensor<?x?xf32> -> tensor<8xi64>
// GENERIC-LABEL: sym_name = "act_order"
// GENERIC: "gptq.act_order"(%{{.*}}) : (tensor<64x64xf32>) -> tensor<64xi64>
func.func @act_order(%h: tensor<64x64xf32>, %d: tensor<?x?xf32>) -> (tensor<64xi64>, tensor<?xi64>, tensor<8xi64>) {
  %p = gptq.act_order %h : tensor<64x64xf32> -> tensor<64xi64>
  %pd = gptq.act_order %d : tensor<?x?xf32> -> tensor<?xi64>
  %ps = gptq.act_order %d : tensor<?x?xf32> -> tensor<8xi64>
  return %p, %pd, %ps : tensor<64xi64>, tensor<?xi64>, tensor<8xi64>
}

// -----

// CHECK-LABEL: func.func @permute
// CHECK-SAME: (%[[W:.+]]: tensor<16x64xf32>, %[[H:.+]]: tensor<64x64xf32>, %[[P:.+]]: tensor<64xi64>
// CHECK: %[[WP:.+]] = gptq.permute %[[W]] by %[[P]] dims [1] : tensor<16x64xf32>, tensor<64xi64>
// CHECK: gptq.permute %[[H]] by %[[P]] dims [0, 1] : tensor<64x64xf32>, tensor<64xi64>
// CHECK: gptq.permute %[[WP]] by %[[P]] inverse dims [1] : tensor<16x64xf32>, tensor<64xi64>
// CHECK: gptq.permute %{{.*}} by %{{.*}} dims [0] : tensor<?xi32>, tensor<?xi64>
// CHECK: gptq.permute %{{.*}} by %{{.*}} inverse dims [2, 0] : tensor<?x3x?xi8>, tensor<?xi64>
// GENERIC-LABEL: sym_name = "permute"
// GENERIC: "gptq.permute"(%{{.*}}, %{{.*}}) <{dims = array<i64: 1>}> : (tensor<16x64xf32>, tensor<64xi64>) -> tensor<16x64xf32>
// GENERIC: "gptq.permute"(%{{.*}}, %{{.*}}) <{dims = array<i64: 0, 1>}>
// GENERIC: "gptq.permute"(%{{.*}}, %{{.*}}) <{dims = array<i64: 1>, inverse}>
func.func @permute(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %p: tensor<64xi64>, %g: tensor<?xi32>, %pd: tensor<?xi64>, %c: tensor<?x3x?xi8>) -> (tensor<16x64xf32>, tensor<64x64xf32>, tensor<?xi32>, tensor<?x3x?xi8>) {
  %wp = gptq.permute %w by %p dims [1] : tensor<16x64xf32>, tensor<64xi64>
  %hp = gptq.permute %h by %p dims [0, 1] : tensor<64x64xf32>, tensor<64xi64>
  %w2 = gptq.permute %wp by %p inverse dims [1] : tensor<16x64xf32>, tensor<64xi64>
  %gp = gptq.permute %g by %pd dims [0] : tensor<?xi32>, tensor<?xi64>
  %cp = gptq.permute %c by %pd inverse dims [2, 0] : tensor<?x3x?xi8>, tensor<?xi64>
  return %w2, %hp, %gp, %cp : tensor<16x64xf32>, tensor<64x64xf32>, tensor<?xi32>, tensor<?x3x?xi8>
}

// -----

// CHECK-LABEL: func.func @mask_dead_inputs
// CHECK-SAME: (%[[W:.+]]: tensor<16x64xf32>, %[[H:.+]]: tensor<64x64xf32>, %[[WD:.+]]: tensor<?x?xf32>, %[[HD:.+]]: tensor<?x?xf32>)
// CHECK: gptq.mask_dead_inputs %[[W]], %[[H]] : tensor<16x64xf32>, tensor<64x64xf32>
// CHECK: gptq.mask_dead_inputs %[[WD]], %[[HD]] : tensor<?x?xf32>, tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "mask_dead_inputs"
// GENERIC: "gptq.mask_dead_inputs"(%{{.*}}, %{{.*}}) : (tensor<16x64xf32>, tensor<64x64xf32>) -> tensor<16x64xf32>
func.func @mask_dead_inputs(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %wd: tensor<?x?xf32>, %hd: tensor<?x?xf32>) -> (tensor<16x64xf32>, tensor<?x?xf32>) {
  %m = gptq.mask_dead_inputs %w, %h : tensor<16x64xf32>, tensor<64x64xf32>
  %md = gptq.mask_dead_inputs %wd, %hd : tensor<?x?xf32>, tensor<?x?xf32>
  return %m, %md : tensor<16x64xf32>, tensor<?x?xf32>
}

// -----

// Per-row grids (the default config prints as an empty config), ragged
// groups (172 columns of 64: 3 groups) and dynamic shapes.
// CHECK-LABEL: func.func @grid
// CHECK: %{{.+}}, %{{.+}} = gptq.grid %{{.*}} {config = #gptq.config<>} : tensor<16x172xf32> -> tensor<16x1xf32>
// CHECK: gptq.grid %{{.*}} {config = #gptq.config<group_size = 64>} : tensor<16x172xf32> -> tensor<16x3xf32>
// CHECK: gptq.grid %{{.*}} {config = #gptq.config<bits = 3, group_size = 128, sym = true, mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "grid"
// GENERIC: "gptq.grid"(%{{.*}}) <{config = #gptq.config<>}> : (tensor<16x172xf32>) -> (tensor<16x1xf32>, tensor<16x1xf32>)
func.func @grid(%w: tensor<16x172xf32>, %wd: tensor<?x?xf32>) -> (tensor<16x1xf32>, tensor<16x3xf32>, tensor<?x?xf32>) {
  %s, %z = gptq.grid %w {config = #gptq.config<>} : tensor<16x172xf32> -> tensor<16x1xf32>
  %s2, %z2 = gptq.grid %w {config = #gptq.config<group_size = 64>} : tensor<16x172xf32> -> tensor<16x3xf32>
  %s3, %z3 = gptq.grid %wd {config = #gptq.config<bits = 3, group_size = 128, sym = true, mse = true>} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %s, %s2, %z3 : tensor<16x1xf32>, tensor<16x3xf32>, tensor<?x?xf32>
}

// -----

// Dynamic groups: no grid(...) operands.
// CHECK-LABEL: func.func @quantize_blocks_dynamic_groups
// CHECK-SAME: (%[[W:.+]]: tensor<16x64xf32>, %[[U:.+]]: tensor<64x64xf32>, %[[WD:.+]]: tensor<?x?xf32>, %[[UD:.+]]: tensor<?x?xf32>)
// CHECK: %[[C:[^ ,]+]], %[[S:[^ ,]+]], %[[Z:[^ ,]+]], %[[L:[^ ,]+]] = gptq.quantize_blocks %[[W]], %[[U]] {config = #gptq.config<group_size = 32>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>
// CHECK: gptq.quantize_blocks %[[WD]], %[[UD]] {config = #gptq.config<group_size = 128, block_size = 32>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
// CHECK: return %[[C]], %[[S]], %[[Z]], %[[L]],
// GENERIC-LABEL: sym_name = "quantize_blocks_dynamic_groups"
// GENERIC: "gptq.quantize_blocks"(%{{.*}}, %{{.*}}) <{config = #gptq.config<group_size = 32>, operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0>}> : (tensor<16x64xf32>, tensor<64x64xf32>) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, f32)
func.func @quantize_blocks_dynamic_groups(%w: tensor<16x64xf32>, %u: tensor<64x64xf32>, %wd: tensor<?x?xf32>, %ud: tensor<?x?xf32>) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, f32, tensor<?x?xi8>) {
  %c, %s, %z, %l = gptq.quantize_blocks %w, %u {config = #gptq.config<group_size = 32>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>
  %cd, %sd, %zd, %ld = gptq.quantize_blocks %wd, %ud {config = #gptq.config<group_size = 128, block_size = 32>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %c, %s, %z, %l, %cd : tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, f32, tensor<?x?xi8>
}

// -----

// Fixed grids: grid(scales, zeros, group map).
// CHECK-LABEL: func.func @quantize_blocks_fixed_grid
// CHECK-SAME: (%[[W:.+]]: tensor<16x64xf32>, %[[U:.+]]: tensor<64x64xf32>, %[[S:.+]]: tensor<16x1xf32>, %[[Z:.+]]: tensor<16x1xf32>, %[[G:.+]]: tensor<64xi32>, %[[SD:.+]]: tensor<?x?xf32>, %[[GD:.+]]: tensor<?xi32>)
// CHECK: gptq.quantize_blocks %[[W]], %[[U]] grid(%[[S]], %[[Z]], %[[G]] : tensor<16x1xf32>, tensor<16x1xf32>, tensor<64xi32>) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>
// CHECK: gptq.quantize_blocks %[[W]], %[[U]] grid(%[[SD]], %[[SD]], %[[GD]] : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<?x?xf32>
// GENERIC-LABEL: sym_name = "quantize_blocks_fixed_grid"
// GENERIC: "gptq.quantize_blocks"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0>}>
func.func @quantize_blocks_fixed_grid(%w: tensor<16x64xf32>, %u: tensor<64x64xf32>, %s: tensor<16x1xf32>, %z: tensor<16x1xf32>, %g: tensor<64xi32>, %sd: tensor<?x?xf32>, %gd: tensor<?xi32>) -> (tensor<16x64xi8>, tensor<16x1xf32>, tensor<?x?xf32>, f32) {
  %c, %s1, %z1, %l = gptq.quantize_blocks %w, %u grid(%s, %z, %g : tensor<16x1xf32>, tensor<16x1xf32>, tensor<64xi32>) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>
  %c2, %s2, %z2, %l2 = gptq.quantize_blocks %w, %u grid(%sd, %sd, %gd : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<?x?xf32>
  return %c, %s1, %z2, %l2 : tensor<16x64xi8>, tensor<16x1xf32>, tensor<?x?xf32>, f32
}

// -----

// CHECK-LABEL: func.func @group_index
// CHECK-SAME: (%[[N:.+]]: index, %[[P:.+]]: tensor<?xi64>, %[[PS:.+]]: tensor<64xi64>)
// CHECK: gptq.group_index %[[N]] {config = #gptq.config<>} : tensor<?xi32>
// CHECK: gptq.group_index %[[N]] perm(%[[P]] : tensor<?xi64>) {config = #gptq.config<group_size = 128, act_order = true>} : tensor<?xi32>
// CHECK: gptq.group_index %[[N]] {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<?xi32>
// CHECK: %[[C:.+]] = arith.constant 64 : index
// CHECK: gptq.group_index %[[C]] perm(%[[PS]] : tensor<64xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<64xi32>
// CHECK: gptq.group_index %[[C]] {config = #gptq.config<group_size = 8>} : tensor<64xi32>
// GENERIC-LABEL: sym_name = "group_index"
// GENERIC: "gptq.group_index"(%{{.*}}) <{config = #gptq.config<>}> : (index) -> tensor<?xi32>
// GENERIC: "gptq.group_index"(%{{.*}}, %{{.*}}) <{config = #gptq.config<group_size = 128, act_order = true>}> : (index, tensor<?xi64>) -> tensor<?xi32>
func.func @group_index(%n: index, %p: tensor<?xi64>, %ps: tensor<64xi64>) -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<64xi32>, tensor<64xi32>) {
  %g0 = gptq.group_index %n {config = #gptq.config<>} : tensor<?xi32>
  %g1 = gptq.group_index %n perm(%p : tensor<?xi64>) {config = #gptq.config<group_size = 128, act_order = true>} : tensor<?xi32>
  %g2 = gptq.group_index %n {config = #gptq.config<group_size = 16, act_order = true, static_groups = true>} : tensor<?xi32>
  %c64 = arith.constant 64 : index
  %g3 = gptq.group_index %c64 perm(%ps : tensor<64xi64>) {config = #gptq.config<group_size = 8, act_order = true>} : tensor<64xi32>
  %g4 = gptq.group_index %c64 {config = #gptq.config<group_size = 8>} : tensor<64xi32>
  return %g0, %g1, %g2, %g3, %g4 : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>, tensor<64xi32>, tensor<64xi32>
}

// -----

// CHECK-LABEL: func.func @dequantize
// CHECK-SAME: (%[[C:.+]]: tensor<16x64xi8>, %[[S:.+]]: tensor<16x2xf32>, %[[Z:.+]]: tensor<16x2xf32>, %[[G:.+]]: tensor<64xi32>
// CHECK: gptq.dequantize %[[C]], %[[S]], %[[Z]], %[[G]] : tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32> -> tensor<16x64xf32>
// CHECK: gptq.dequantize %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
// CHECK: gptq.dequantize %[[C]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x64xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x64xf32>
// GENERIC-LABEL: sym_name = "dequantize"
// GENERIC: "gptq.dequantize"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>) -> tensor<16x64xf32>
func.func @dequantize(%c: tensor<16x64xi8>, %s: tensor<16x2xf32>, %z: tensor<16x2xf32>, %g: tensor<64xi32>, %cd: tensor<?x?xi8>, %sd: tensor<?x?xf32>, %gd: tensor<?xi32>) -> (tensor<16x64xf32>, tensor<?x?xf32>, tensor<?x64xf32>) {
  %w = gptq.dequantize %c, %s, %z, %g : tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32> -> tensor<16x64xf32>
  %wd = gptq.dequantize %cd, %sd, %sd, %gd : tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x?xf32>
  %wm = gptq.dequantize %c, %sd, %sd, %gd : tensor<16x64xi8>, tensor<?x?xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %w, %wd, %wm : tensor<16x64xf32>, tensor<?x?xf32>, tensor<?x64xf32>
}

// -----

// 3-bit codes straddle words: 10 codes of 3 bits take ceil(30 / 32) = 1
// word, 11 codes take 2.
// CHECK-LABEL: func.func @pack
// CHECK: gptq.pack %{{.*}} bits 4 : tensor<16x64xi8> -> tensor<16x8xi32>
// CHECK: gptq.pack %{{.*}} bits 3 : tensor<2x10xi8> -> tensor<2x1xi32>
// CHECK: gptq.pack %{{.*}} bits 3 : tensor<2x11xi8> -> tensor<2x2xi32>
// CHECK: gptq.pack %{{.*}} bits 8 : tensor<?x?xi8> -> tensor<?x?xi32>
// CHECK: gptq.pack %{{.*}} bits 1 : tensor<?x?xi8> -> tensor<?x7xi32>
// GENERIC-LABEL: sym_name = "pack"
// GENERIC: "gptq.pack"(%{{.*}}) <{bits = 4 : i64}> : (tensor<16x64xi8>) -> tensor<16x8xi32>
func.func @pack(%c: tensor<16x64xi8>, %c10: tensor<2x10xi8>, %c11: tensor<2x11xi8>, %cd: tensor<?x?xi8>) -> (tensor<16x8xi32>, tensor<2x1xi32>, tensor<2x2xi32>, tensor<?x?xi32>, tensor<?x7xi32>) {
  %p = gptq.pack %c bits 4 : tensor<16x64xi8> -> tensor<16x8xi32>
  %p10 = gptq.pack %c10 bits 3 : tensor<2x10xi8> -> tensor<2x1xi32>
  %p11 = gptq.pack %c11 bits 3 : tensor<2x11xi8> -> tensor<2x2xi32>
  %pd = gptq.pack %cd bits 8 : tensor<?x?xi8> -> tensor<?x?xi32>
  %p1 = gptq.pack %cd bits 1 : tensor<?x?xi8> -> tensor<?x7xi32>
  return %p, %p10, %p11, %pd, %p1 : tensor<16x8xi32>, tensor<2x1xi32>, tensor<2x2xi32>, tensor<?x?xi32>, tensor<?x7xi32>
}

// -----

// CHECK-LABEL: func.func @unpack
// CHECK-SAME: (%[[P:.+]]: tensor<16x8xi32>, %[[PD:.+]]: tensor<?x?xi32>, %[[N:.+]]: index)
// CHECK: %[[C64:.+]] = arith.constant 64 : index
// CHECK: gptq.unpack %[[P]] columns %[[C64]] bits 4 : tensor<16x8xi32> -> tensor<16x64xi8>
// CHECK: gptq.unpack %[[PD]] columns %[[N]] bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
// CHECK: gptq.unpack %[[P]] columns %[[N]] bits 2 : tensor<16x8xi32> -> tensor<16x?xi8>
// GENERIC-LABEL: sym_name = "unpack"
// GENERIC: "gptq.unpack"(%{{.*}}, %{{.*}}) <{bits = 4 : i64}> : (tensor<16x8xi32>, index) -> tensor<16x64xi8>
func.func @unpack(%p: tensor<16x8xi32>, %pd: tensor<?x?xi32>, %n: index) -> (tensor<16x64xi8>, tensor<?x?xi8>, tensor<16x?xi8>) {
  %c64 = arith.constant 64 : index
  %c = gptq.unpack %p columns %c64 bits 4 : tensor<16x8xi32> -> tensor<16x64xi8>
  %cd = gptq.unpack %pd columns %n bits 3 : tensor<?x?xi32> -> tensor<?x?xi8>
  %cm = gptq.unpack %p columns %n bits 2 : tensor<16x8xi32> -> tensor<16x?xi8>
  return %c, %cd, %cm : tensor<16x64xi8>, tensor<?x?xi8>, tensor<16x?xi8>
}

// -----

// CHECK-LABEL: func.func @quantize_layer
// CHECK-SAME: (%[[W:.+]]: tensor<16x64xf32>, %[[H:.+]]: tensor<64x64xf32>, %[[P:.+]]: f32)
// CHECK: %[[C:[^ ,]+]], %[[S:[^ ,]+]], %[[Z:[^ ,]+]], %[[G:[^ ,]+]], %[[L:[^ ,]+]], %[[OK:[^ ,]+]] = gptq.quantize_layer %[[W]], %[[H]] {config = #gptq.config<group_size = 32, act_order = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32>
// CHECK: gptq.quantize_layer %[[W]], %[[H]] percdamp(%[[P]]) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>, tensor<64xi32>
// CHECK: return %[[C]], %[[S]], %[[Z]], %[[G]], %[[L]], %[[OK]],
// GENERIC-LABEL: sym_name = "quantize_layer"
// GENERIC: "gptq.quantize_layer"(%{{.*}}, %{{.*}}) <{config = #gptq.config<group_size = 32, act_order = true>, operandSegmentSizes = array<i32: 1, 1, 0, 0>}> : (tensor<16x64xf32>, tensor<64x64xf32>) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>, f32, i1)
// GENERIC: "gptq.quantize_layer"(%{{.*}}, %{{.*}}, %{{.*}}) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 1, 0>}> : (tensor<16x64xf32>, tensor<64x64xf32>, f32)
func.func @quantize_layer(%w: tensor<16x64xf32>, %h: tensor<64x64xf32>, %p: f32) -> (tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>, f32, i1, tensor<16x1xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h {config = #gptq.config<group_size = 32, act_order = true>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x2xf32>, tensor<64xi32>
  %c2, %s2, %z2, %g2, %l2, %ok2 = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<>} : tensor<16x64xf32>, tensor<64x64xf32> -> tensor<16x64xi8>, tensor<16x1xf32>, tensor<64xi32>
  return %c, %s, %z, %g, %l, %ok, %s2 : tensor<16x64xi8>, tensor<16x2xf32>, tensor<16x2xf32>, tensor<64xi32>, f32, i1, tensor<16x1xf32>
}

// -----

// CHECK-LABEL: func.func @quantize_layer_dynamic
// CHECK: gptq.quantize_layer %{{.*}}, %{{.*}} percdamp(%{{.*}}) {config = #gptq.config<bits = 3, group_size = 128, sym = true, act_order = true, static_groups = true, percdamp = 5.000000e-02, block_size = 64, mse = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
// CHECK: gptq.quantize_layer %{{.*}}, %{{.*}} {config = #gptq.config<group_size = 8>} : tensor<?x24xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x3xf32>, tensor<24xi32>
func.func @quantize_layer_dynamic(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %p: f32, %ws: tensor<?x24xf32>) -> (tensor<?x?xi8>, tensor<?x3xf32>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h percdamp(%p) {config = #gptq.config<bits = 3, group_size = 128, sym = true, act_order = true, static_groups = true, percdamp = 0.05, block_size = 64, mse = true>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %c2, %s2, %z2, %g2, %l2, %ok2 = gptq.quantize_layer %ws, %h {config = #gptq.config<group_size = 8>} : tensor<?x24xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x3xf32>, tensor<24xi32>
  return %c, %s2 : tensor<?x?xi8>, tensor<?x3xf32>
}

// -----

// The width as a run-time value (`bits`), which replaces the config's.
// CHECK-LABEL: func.func @run_time_bits
// CHECK-SAME: (%[[W:.+]]: tensor<?x?xf32>, %[[H:.+]]: tensor<?x?xf32>, %[[U:.+]]: tensor<?x?xf32>, %[[P:.+]]: f32, %[[B:.+]]: i64)
// CHECK: gptq.quantize_layer %[[W]], %[[H]] percdamp(%[[P]]) bits(%[[B]]) {config = #gptq.config<group_size = 32>}
// CHECK: gptq.quantize_layer %[[W]], %[[H]] bits(%[[B]]) {config = #gptq.config<>}
// CHECK: gptq.grid %[[W]] bits(%[[B]]) {config = #gptq.config<>} : tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: gptq.quantize_blocks %[[W]], %[[U]] bits(%[[B]]) {config = #gptq.config<group_size = 32>}
// CHECK: gptq.quantize_blocks %[[W]], %[[U]] grid(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) bits(%[[B]]) {config = #gptq.config<>}
// GENERIC-LABEL: sym_name = "run_time_bits"
// GENERIC: "gptq.quantize_layer"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{config = #gptq.config<group_size = 32>, operandSegmentSizes = array<i32: 1, 1, 1, 1>}>
// GENERIC: "gptq.quantize_layer"(%{{.*}}, %{{.*}}, %{{.*}}) <{config = #gptq.config<>, operandSegmentSizes = array<i32: 1, 1, 0, 1>}>
func.func @run_time_bits(%w: tensor<?x?xf32>, %h: tensor<?x?xf32>, %u: tensor<?x?xf32>, %p: f32, %b: i64) -> (tensor<?x?xi8>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xi8>) {
  %c, %s, %z, %g, %l, %ok = gptq.quantize_layer %w, %h percdamp(%p) bits(%b) {config = #gptq.config<group_size = 32>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %c2, %s2, %z2, %g2, %l2, %ok2 = gptq.quantize_layer %w, %h bits(%b) {config = #gptq.config<>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>, tensor<?xi32>
  %gs, %gz = gptq.grid %w bits(%b) {config = #gptq.config<>} : tensor<?x?xf32> -> tensor<?x?xf32>
  %c3, %s3, %z3, %l3 = gptq.quantize_blocks %w, %u bits(%b) {config = #gptq.config<group_size = 32>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  %c4, %s4, %z4, %l4 = gptq.quantize_blocks %w, %u grid(%gs, %gz, %g2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xi32>) bits(%b) {config = #gptq.config<>} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xi8>, tensor<?x?xf32>
  return %c, %c2, %gs, %c3, %c4 : tensor<?x?xi8>, tensor<?x?xi8>, tensor<?x?xf32>, tensor<?x?xi8>, tensor<?x?xi8>
}
