// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops,aotk-cse,aotk-canonicalize | filecheck %s

// Gate slices of one product are read in place: the second slice is %z moved 4 floats
// (16 bytes) on, both are indexed with %z's row stride of 8, and nothing is copied (the
// function needs no workspace). x[:] of the run-time batch keeps the batch dim itself.
// CHECK-LABEL: func.func @gates(
// CHECK:         %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK:         %[[SIXTEEN:.*]] = arith.constant 16 : index
// CHECK:         %[[N:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[BASE:.*]] = ptr_xdsl.to_ptr %z
// CHECK-NEXT:    %[[MOVED:.*]] = ptr_xdsl.ptradd %[[BASE]], %[[SIXTEEN]]
// CHECK-NEXT:    %[[B:.*]] = ptr_xdsl.from_ptr %[[MOVED]] : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:    scf.for %[[R:.*]] = %{{.*}} to %[[N]] step
// CHECK-NEXT:      scf.for %[[C:.*]] = %{{.*}} to
// CHECK-NEXT:        %[[ROW:.*]] = arith.muli %[[R]], %[[EIGHT]] : index
// CHECK-NEXT:        %[[AT:.*]] = arith.addi %[[ROW]], %[[C]] : index
// CHECK-NEXT:        %[[X:.*]] = memref.load %z[%[[AT]]] : memref<?xf32>
// CHECK-NEXT:        %[[Y:.*]] = memref.load %[[B]][%[[AT]]] : memref<?xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK:             memref.store %[[P]], %out0[
// CHECK-LABEL: func.func @gates_workspace_size(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:    func.return %[[SIZE]]
func.func @gates(%z: tensor<?x8xf32>) -> tensor<?x4xf32> {
  %a = "aotk.slice"(%z) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<?x8xf32>) -> tensor<?x4xf32>
  %b = "aotk.slice"(%z) <{start = array<i64: 0, 4>, stop = array<i64: 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<?x8xf32>) -> tensor<?x4xf32>
  %y = "aotk.mul"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

// A new carry elementwise in the old one is computed in the carry's buffer: each step
// is one loop that loads and stores the same element, with no copy after it, and the
// final carry is copied to the output once.
// CHECK-LABEL: func.func @carry_in_place(
// CHECK:         %[[CARRY:.*]] = ptr_xdsl.from_ptr %workspace : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[CARRY]]
// CHECK:         scf.for
// CHECK:           scf.for %[[I:.*]] =
// CHECK-NEXT:        %[[OLD:.*]] = memref.load %[[CARRY]][%[[I]]]
// CHECK-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT:        %[[NEW:.*]] = arith.mulf %[[OLD]], %[[X]]
// CHECK-NEXT:        memref.store %[[NEW]], %[[CARRY]][%[[I]]]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      memref.load %[[CARRY]]
// CHECK-NEXT:      memref.store %{{.*}}, %out0
// CHECK-LABEL: func.func @carry_in_place_workspace_size(
// CHECK:         arith.constant 64 : index
func.func @carry_in_place(%xs: tensor<5x2x4xf32>, %c0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c = aotk.scan seqs(%x = %xs) carries(%s = %c0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>) {
    %n = "aotk.mul"(%s, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %n : tensor<2x4xf32>
  }
  func.return %c : tensor<2x4xf32>
}

// -----

// Here every row of the new carry reads the old carry's row 0 (a view of it, read in
// place): writing row 0 first would change what row 1 reads, so the step computes into
// a buffer of its own and copies it over the carry afterwards.
// CHECK-LABEL: func.func @carry_reads_another_row(
// CHECK:         %[[CARRY:.*]] = ptr_xdsl.from_ptr %workspace : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         %[[NEXT:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[CARRY]]
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NEXT:        scf.for %[[C:.*]] =
// CHECK:               memref.load %[[CARRY]][%[[C]]]
// CHECK:               memref.store %{{.*}}, %[[NEXT]]
// CHECK:           scf.for
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[NEXT]]
// CHECK-NEXT:        memref.store %[[V]], %[[CARRY]]
func.func @carry_reads_another_row(%xs: tensor<5x2x4xf32>, %c0: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %c = aotk.scan seqs(%x = %xs) carries(%s = %c0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>) {
    %r = "aotk.slice"(%s) <{start = array<i64: 0, 0>, stop = array<i64: 1, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>) -> tensor<1x4xf32>
    %n = "aotk.mul"(%x, %r) : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
    aotk.yield %n : tensor<2x4xf32>
  }
  func.return %c : tensor<2x4xf32>
}

// -----

// A step output that a loop computes is written straight into its row of the stacked
// result (%out0 moved t * 8 floats on); a carry yielded unchanged is neither staged
// nor copied: the step is its one loop.
// CHECK-LABEL: func.func @output_in_row(
// CHECK:         %[[CARRY:.*]] = ptr_xdsl.from_ptr %workspace : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         scf.for
// CHECK:           memref.store %{{.*}}, %[[CARRY]]
// CHECK:         scf.for %[[T:.*]] =
// CHECK-NEXT:      %[[ROW_AT:.*]] = arith.muli %[[T]], %{{.*}} : index
// CHECK:           %[[BYTES:.*]] = arith.muli %[[ROW_AT]], %{{.*}} : index
// CHECK:           %[[OUT:.*]] = ptr_xdsl.to_ptr %out0
// CHECK-NEXT:      %[[MOVED:.*]] = ptr_xdsl.ptradd %[[OUT]], %[[BYTES]]
// CHECK-NEXT:      %[[ROW:.*]] = ptr_xdsl.from_ptr %[[MOVED]]
// CHECK-NEXT:      scf.for %[[I:.*]] =
// CHECK-NEXT:        %[[OLD:.*]] = memref.load %[[CARRY]][%[[I]]]
// CHECK-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[OLD]], %[[X]]
// CHECK-NEXT:        memref.store %[[Y]], %[[ROW]][%[[I]]]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @output_in_row(%xs: tensor<5x2x4xf32>, %c0: tensor<2x4xf32>) -> tensor<5x2x4xf32> {
  %c, %ys = aotk.scan seqs(%x = %xs) carries(%s = %c0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<5x2x4xf32>) {
    %y = "aotk.mul"(%s, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %s, %y : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.return %ys : tensor<5x2x4xf32>
}

// -----

// A carry computed in place (c * z[:, :4], rows known at the call: the steps' and the
// carry's, whose maximum the product has) is loaded and stored at one index: LLVM's
// vectorizer needs to see that each element is read where it is written. (Indexed with
// broadcast strides of its own dims, as operands of other dims are, the loop ran scalar
// after a failed alias check.) The second carry, not a matrix of rows, keeps the steps
// whole (`scan_rows`).
// CHECK-LABEL: func.func @carry(
// CHECK-DAG:     %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:               scf.for %[[COL:.*]] = %{{.*}} to %[[FOUR]] step
// CHECK-NEXT:            arith.muli
// CHECK-NEXT:            arith.addi
// CHECK-NEXT:            memref.load
// CHECK-NEXT:            %[[ROW:.*]] = arith.muli %{{.*}}, %[[FOUR]] : index
// CHECK-NEXT:            %[[AT:.*]] = arith.addi %[[ROW]], %[[COL]] : index
// CHECK-NEXT:            %[[OLD:.*]] = memref.load %[[C:.*]][%[[AT]]] : memref<?xf32>
// CHECK-NEXT:            %[[NEW:.*]] = arith.mulf %{{.*}}, %[[OLD]] : f32
// CHECK-NEXT:            memref.store %[[NEW]], %[[C]][%[[AT]]] : memref<?xf32>
// CHECK-LABEL: func.func @carry_workspace_size(
func.func @carry(%zs: tensor<3x?x8xf32>, %c0: tensor<?x4xf32>, %k0: tensor<2xf32>) -> tensor<?x4xf32> {
  %cn, %kn = aotk.scan seqs(%z = %zs) carries(%c = %c0, %k = %k0) : (tensor<3x?x8xf32>, tensor<?x4xf32>, tensor<2xf32>) -> (tensor<?x4xf32>, tensor<2xf32>) {
    %a = "aotk.slice"(%z) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<?x8xf32>) -> tensor<?x4xf32>
    %n = aotk.fused(%ea = %a, %ec = %c) : (tensor<?x4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>) {
      %m = "aotk.mul"(%ea, %ec) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      aotk.yield %m : tensor<f32>
    }
    aotk.yield %n, %k : tensor<?x4xf32>, tensor<2xf32>
  }
  func.return %cn : tensor<?x4xf32>
}
