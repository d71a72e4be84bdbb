// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv of 32 channels into 64 on 15x17 images, by Winograd's F(4x4, 3x3):
// the outputs in 4x4 tiles, 4 rows x 5 columns of them per image (at least 12 tiles a
// call, as many outputs as F(2x2, 3x3)'s 48, so no direct conv is built), the last row
// and column of tiles overhanging the output by one and by three. U = G g G^T first (36
// values a channel pair, the input channels split across threads): a loop over the
// kernel's 3 rows (3 loads, 6 stores of g G^T each), then one over the 6 columns of
// that, in place (3 loads, 6 stores each). Then threads split the blocks of up to 15
// tiles (in order, across rows and images) in at most 8 runs: per block, the input
// transform, a loop over the patch's 6 rows (6 masked loads, 6 stores each) and one
// over the 6 columns (6 loads, 6 stores each); 36 products in register tiles of 5 tiles
// x 2 vectors; then the output transform, whose 16 vectors each go through a mask: none
// of an output past the image's edge is stored.
// CHECK-LABEL: func.func @winograd(
// CHECK-DAG:     %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[TILE_COLUMNS:.*]] = arith.constant 5 : index
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NOT:     scf.if
// CHECK:               scf.for
// CHECK-COUNT-3:         vector.load %w[
// CHECK-NOT:             vector.load
// CHECK-COUNT-6:         vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-NEXT:          }
// CHECK-NEXT:          scf.for
// CHECK-COUNT-3:         vector.load %[[SCRATCH]][
// CHECK-COUNT-6:         vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:         } {aotk.parallel =
// CHECK:         %[[ROWS:.*]] = arith.muli %{{.*}}, %[[FOUR]] : index
// CHECK-NEXT:    %[[TILES:.*]] = arith.muli %[[ROWS]], %[[TILE_COLUMNS]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK-NOT:       vector.maskedload %x[
// CHECK-COUNT-6:   vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for
// CHECK-COUNT-6:   vector.load %[[SCRATCH]][
// CHECK-COUNT-6:   vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-10:    vector.fma
// CHECK-COUNT-16:  vector.create_mask
// CHECK-COUNT-36:  vector.load %[[SCRATCH]][
// CHECK-COUNT-16:  vector.maskedstore %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// CHECK-LABEL: func.func @winograd_workspace_size(
// CHECK:         arith.constant 1961984 : index

// The same conv on images of any size: a call of fewer than 12 tiles (U is made in
// every call, and few blocks leave threads idle) runs the direct conv's register tiles,
// as does one whose outputs fill less than a third of the tiles' (3 x 2 x 2 < 16).
// CHECK-LABEL: func.func @few_tiles(
// CHECK:         %[[FEW:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[OUTPUTS:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[SPARSE:.*]] = arith.cmpi slt, %[[OUTPUTS]], %{{.*}} : index
// CHECK-NEXT:    %[[DIRECT:.*]] = arith.ori %[[FEW]], %[[SPARSE]] : i1
// CHECK-NEXT:    scf.if %[[DIRECT]] {
// CHECK-NOT:       vector.maskedload
// CHECK:             vector.fma
// CHECK:         } else {
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK:         func.return

// 400 channels into 400: F(4x4, 3x3)'s V and M of a block of 10 tiles would take more than
// L2 (36 x 10 x 800 floats), so the products are matmuls over blocks of up to 128 tiles
// (`conv_winograd_gemm`). U first, in the matmul's slivers (threads splitting the input
// channels; the kernel's vectors of output channels in masked loads, zeros past its
// end); then per block, the input transform (threads splitting the tiles: 6 masked
// loads a row of a patch), one loop over the 36 points, each a call of the prepacked
// matmul micro-kernel on that point's V, slivers of U and M (tiles x 400 by 400 x 400:
// nothing packed per call), and the output transform (threads splitting the tiles): 36
// loads of M, 16 masked stores a tile. U, V and M take 37.8 MB of workspace.
// CHECK-LABEL: func.func @wide(
// CHECK:           vector.maskedload %w[
// CHECK:         } {aotk.parallel =
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-COUNT-6:     vector.maskedload %x[
// CHECK:           } {aotk.parallel =
// CHECK-NEXT:      scf.for
// CHECK-NOT:         scf.for
// CHECK:             func.call @aotk_uk_matmul_float32_prepacked(
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for
// CHECK-COUNT-36:    vector.load
// CHECK-COUNT-16:    vector.maskedstore %out0[
// CHECK:           } {aotk.parallel =
// CHECK:         func.return
// CHECK-LABEL: func.func @wide_workspace_size(
// CHECK:         arith.constant 37793792 : index
func.func @winograd(%x: tensor<?x15x17x32xf32>, %w: tensor<3x3x32x64xf32>) -> tensor<?x15x17x64xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x15x17x32xf32>, tensor<3x3x32x64xf32>) -> tensor<?x15x17x64xf32>
  func.return %y : tensor<?x15x17x64xf32>
}

func.func @few_tiles(%x: tensor<?x?x?x32xf32>, %w: tensor<3x3x32x64xf32>) -> tensor<?x?x?x64xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x?x?x32xf32>, tensor<3x3x32x64xf32>) -> tensor<?x?x?x64xf32>
  func.return %y : tensor<?x?x?x64xf32>
}

func.func @wide(%x: tensor<?x15x17x400xf32>, %w: tensor<3x3x400x400xf32>) -> tensor<?x15x17x400xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x15x17x400xf32>, tensor<3x3x400x400xf32>) -> tensor<?x15x17x400xf32>
  func.return %y : tensor<?x15x17x400xf32>
}
