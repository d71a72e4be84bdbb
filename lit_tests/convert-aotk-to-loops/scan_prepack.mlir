// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A recurrent step h @ U and its gradient's g @ U^T: U is defined outside the scan, so
// each is packed once before the loop over the steps, into workspace slices of K rows
// of N rounded up to whole slivers (2 AVX2 vectors, 16 columns): 12 x 32 floats from
// byte 0, then 20 x 16 from byte 1536 (the arena of static sizes of whole 64-byte
// units, `workspace_plan`; the carry and the steps' values follow). The steps multiply by the
// packed copies, and the first one starts from the step's input x: it writes x + s @ U,
// and no add loop is left. The matmuls of two step values stay plain calls.
// CHECK-LABEL: func.func @recurrent(
// CHECK:         %[[OFF1:.*]] = arith.constant 1536 : index
// CHECK:         %[[OFF0:.*]] = arith.constant 0 : index
// CHECK:         %[[AT0:.*]] = ptr_xdsl.ptradd %workspace, %[[OFF0]]
// CHECK-NEXT:    %[[PACKED0:.*]] = ptr_xdsl.from_ptr %[[AT0]] : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:    %[[P0:.*]] = ptr_xdsl.to_ptr %[[PACKED0]]
// CHECK-NEXT:    %[[U0:.*]] = ptr_xdsl.to_ptr %u
// CHECK-NEXT:    %[[N0:.*]] = arith.constant 20 : i64
// CHECK-NEXT:    %[[K0:.*]] = arith.constant 12 : i64
// CHECK-NEXT:    func.call @aotk_uk_pack_rhs_float32(%[[P0]], %[[U0]], %[[N0]], %[[K0]])
// CHECK-NEXT:    %[[AT1:.*]] = ptr_xdsl.ptradd %workspace, %[[OFF1]]
// CHECK-NEXT:    %[[PACKED1:.*]] = ptr_xdsl.from_ptr %[[AT1]] : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:    %[[P1:.*]] = ptr_xdsl.to_ptr %[[PACKED1]]
// CHECK-NEXT:    %[[U1:.*]] = ptr_xdsl.to_ptr %u
// CHECK-NEXT:    %[[N1:.*]] = arith.constant 12 : i64
// CHECK-NEXT:    %[[K1:.*]] = arith.constant 20 : i64
// CHECK-NEXT:    func.call @aotk_uk_pack_rhs_float32_tb(%[[P1]], %[[U1]], %[[N1]], %[[K1]])
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK-NOT:       pack_rhs
// CHECK:           %[[ROW:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:      %[[Z:.*]] = ptr_xdsl.to_ptr %[[SUM:.*]] : memref<60xf32>
// CHECK-NEXT:      %[[H:.*]] = ptr_xdsl.to_ptr
// CHECK-NEXT:      %[[Q0:.*]] = ptr_xdsl.to_ptr %[[PACKED0]]
// CHECK-NEXT:      %[[X:.*]] = ptr_xdsl.to_ptr %[[ROW]]
// CHECK-NEXT:      arith.constant 3 : i64
// CHECK-NEXT:      arith.constant 20 : i64
// CHECK-NEXT:      arith.constant 12 : i64
// CHECK-NEXT:      func.call @aotk_uk_matmul_float32_prepacked_add(%[[Z]], %[[H]], %[[Q0]], %[[X]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:       arith.addf
// CHECK:           %[[Z2:.*]] = ptr_xdsl.to_ptr %[[SUM]]
// CHECK-NEXT:      %[[Q1:.*]] = ptr_xdsl.to_ptr %[[PACKED1]]
// CHECK-NEXT:      arith.constant 3 : i64
// CHECK-NEXT:      arith.constant 12 : i64
// CHECK-NEXT:      arith.constant 20 : i64
// CHECK-NEXT:      func.call @aotk_uk_matmul_float32_prepacked(%{{.*}}, %[[Z2]], %[[Q1]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:           func.call @aotk_uk_matmul_float32_tb(
// CHECK:           func.call @aotk_uk_matmul_float32(
// CHECK-LABEL: func.func @recurrent_workspace_size(
func.func @recurrent(%xs: tensor<5x3x20xf32>, %h0: tensor<3x12xf32>, %u: tensor<12x20xf32>) -> tensor<3x12xf32> {
  %h = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3x20xf32>, tensor<3x12xf32>) -> tensor<3x12xf32> {
    %su = "aotk.matmul"(%s, %u) : (tensor<3x12xf32>, tensor<12x20xf32>) -> tensor<3x20xf32>
    %z = "aotk.add"(%x, %su) : (tensor<3x20xf32>, tensor<3x20xf32>) -> tensor<3x20xf32>
    %back = "aotk.matmul"(%z, %u) <{transpose_rhs = true}> : (tensor<3x20xf32>, tensor<12x20xf32>) -> tensor<3x12xf32>
    %sq = "aotk.matmul"(%back, %s) <{transpose_rhs = true}> : (tensor<3x12xf32>, tensor<3x12xf32>) -> tensor<3x3xf32>
    %r = "aotk.matmul"(%sq, %back) : (tensor<3x3xf32>, tensor<3x12xf32>) -> tensor<3x12xf32>
    aotk.yield %r : tensor<3x12xf32>
  }
  func.return %h : tensor<3x12xf32>
}

// The product is added to a value computed after it (tanh(x)), or broadcast (a bias):
// both stay adds, after plain prepacked calls.
// CHECK-LABEL: func.func @unfused(
// CHECK-NOT:     prepacked_add
// CHECK:         func.call @aotk_uk_matmul_float32_prepacked(
// CHECK-NOT:     prepacked_add
// CHECK:         arith.addf
// CHECK-NOT:     prepacked_add
// CHECK:         func.call @aotk_uk_matmul_float32_prepacked(
// CHECK-NOT:     prepacked_add
// CHECK:         arith.addf
// CHECK-NOT:     prepacked_add
// CHECK-LABEL: func.func @unfused_workspace_size(
func.func @unfused(%xs: tensor<5x3x20xf32>, %h0: tensor<3x20xf32>, %u: tensor<20x20xf32>, %bias: tensor<20xf32>) -> tensor<3x20xf32> {
  %h = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3x20xf32>, tensor<3x20xf32>) -> tensor<3x20xf32> {
    %su = "aotk.matmul"(%s, %u) : (tensor<3x20xf32>, tensor<20x20xf32>) -> tensor<3x20xf32>
    %t = "aotk.tanh"(%x) : (tensor<3x20xf32>) -> tensor<3x20xf32>
    %z = "aotk.add"(%su, %t) : (tensor<3x20xf32>, tensor<3x20xf32>) -> tensor<3x20xf32>
    %zu = "aotk.matmul"(%z, %u) : (tensor<3x20xf32>, tensor<20x20xf32>) -> tensor<3x20xf32>
    %r = "aotk.add"(%zu, %bias) : (tensor<3x20xf32>, tensor<20xf32>) -> tensor<3x20xf32>
    aotk.yield %r : tensor<3x20xf32>
  }
  func.return %h : tensor<3x20xf32>
}

// Two products by one weight in one layout read one packed copy: a single pack before
// the loop, and both steps' calls take their B from the same workspace slice.
// CHECK-LABEL: func.func @shared(
// CHECK:         %[[PACKED:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK:         func.call @aotk_uk_pack_rhs_float32(
// CHECK-NOT:     pack_rhs
// CHECK:         scf.for
// CHECK:           %[[B0:.*]] = ptr_xdsl.to_ptr %[[PACKED]]
// CHECK:           func.call @aotk_uk_matmul_float32_prepacked(%{{.*}}, %{{.*}}, %[[B0]],
// CHECK:           %[[B1:.*]] = ptr_xdsl.to_ptr %[[PACKED]]
// CHECK:           func.call @aotk_uk_matmul_float32_prepacked(%{{.*}}, %{{.*}}, %[[B1]],
// CHECK-LABEL: func.func @shared_workspace_size(
func.func @shared(%xs: tensor<5x3x20xf32>, %h0: tensor<3x20xf32>, %u: tensor<20x20xf32>) -> tensor<3x20xf32> {
  %h = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3x20xf32>, tensor<3x20xf32>) -> tensor<3x20xf32> {
    %su = "aotk.matmul"(%s, %u) : (tensor<3x20xf32>, tensor<20x20xf32>) -> tensor<3x20xf32>
    %t = "aotk.tanh"(%su) : (tensor<3x20xf32>) -> tensor<3x20xf32>
    %tu = "aotk.matmul"(%t, %u) : (tensor<3x20xf32>, tensor<20x20xf32>) -> tensor<3x20xf32>
    aotk.yield %tu : tensor<3x20xf32>
  }
  func.return %h : tensor<3x20xf32>
}

// The gates after the recurrent product run in the same loop, by blocks of rows (6, the
// AVX2 register tile's): each block's product rows (the prepacked matmul with the add
// on rows r0.., A and X moved r0 rows on), then tanh(a) * b on those rows, read through
// the views of the product and written to the carry in place. No loop of its own for
// the gates, no copy of the carry. (A state that is not a matrix of the batch's rows,
// k, keeps the steps whole: see scan_rows.mlir for the steps run by blocks of rows.)
// CHECK-LABEL: func.func @gates(
// CHECK:         %[[CARRY_AT:.*]] = ptr_xdsl.ptradd %workspace
// CHECK-NEXT:    %[[CARRY:.*]] = ptr_xdsl.from_ptr %[[CARRY_AT]] : !ptr_xdsl.ptr -> memref<40xf32>
// CHECK:         func.call @aotk_uk_pack_rhs_float32(
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[CARRY]]
// CHECK:         scf.for
// CHECK-NEXT:      memref.load %k0
// CHECK:         scf.for %[[T:.*]] =
// CHECK:           scf.for %[[B:.*]] =
// CHECK-NEXT:        %[[R0:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK-NEXT:        %[[LEFT:.*]] = arith.subi %{{.*}}, %[[R0]] : index
// CHECK-NEXT:        %[[ROWS:.*]] = arith.minsi %{{.*}}, %[[LEFT]] : index
// CHECK:             %[[ROWS_AT:.*]] = ptr_xdsl.ptradd %[[CARRY_AT]], %{{.*}}
// CHECK-NEXT:        %[[CARRY_ROWS:.*]] = ptr_xdsl.from_ptr %[[ROWS_AT]]
// CHECK:             %[[N:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECK:             func.call @aotk_uk_matmul_float32_prepacked_add(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[N]],
// CHECK:             scf.for %{{.*}} = %{{.*}} to %[[ROWS]] step
// CHECK:               math.absf
// CHECK:               math.copysign
// CHECK:               arith.mulf
// CHECK:               memref.store %{{.*}}, %[[CARRY_ROWS]]
// CHECK-NOT:     func.call
// CHECK:         scf.for
// CHECK-NEXT:      memref.load %[[CARRY]]
// CHECK-NEXT:      memref.store %{{.*}}, %out0
// CHECK-LABEL: func.func @gates_workspace_size(
func.func @gates(%xw: tensor<3x10x8xf32>, %h0: tensor<10x4xf32>, %u: tensor<4x8xf32>, %k0: tensor<2xf32>) -> tensor<10x4xf32> {
  %hn, %kn = aotk.scan seqs(%x = %xw) carries(%h = %h0, %k = %k0) : (tensor<3x10x8xf32>, tensor<10x4xf32>, tensor<2xf32>) -> (tensor<10x4xf32>, tensor<2xf32>) {
    %p = "aotk.matmul"(%h, %u) : (tensor<10x4xf32>, tensor<4x8xf32>) -> tensor<10x8xf32>
    %z = "aotk.add"(%x, %p) : (tensor<10x8xf32>, tensor<10x8xf32>) -> tensor<10x8xf32>
    %a = "aotk.slice"(%z) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<10x8xf32>) -> tensor<10x4xf32>
    %b = "aotk.slice"(%z) <{start = array<i64: 0, 4>, stop = array<i64: 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<10x8xf32>) -> tensor<10x4xf32>
    %n = aotk.fused(%ea = %a, %eb = %b) : (tensor<10x4xf32>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
      %t = "aotk.tanh"(%ea) : (tensor<f32>) -> tensor<f32>
      %m = "aotk.mul"(%t, %eb) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      aotk.yield %m : tensor<f32>
    }
    aotk.yield %n, %k : tensor<10x4xf32>, tensor<2xf32>
  }
  func.return %hn : tensor<10x4xf32>
}
