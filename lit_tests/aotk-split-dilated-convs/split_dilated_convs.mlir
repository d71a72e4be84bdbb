// RUN: aotk-opt %s --split-input-file -p aotk-split-dilated-convs | filecheck %s

// A 3x3 transposed conv with stride 2 (input dilated by 2): each of the four output
// phases (row and column parity) is a plain conv of the undilated input with the
// kernel's taps of that phase (1x1, 1x2, 2x1, 2x2), padded after where its taps reach
// past the input. A size-1 axis after each spatial axis, concats of the phases along
// it, and a reshape interleave them.
// CHECK-LABEL: func.func @transposed
// CHECK:         %[[W00:.*]] = "aotk.slice"(%w) <{start = array<i64: 1, 1, 0, 0>, {{.*}}, step = array<i64: 2, 2, 1, 1>}> : (tensor<3x3x8x16xf32>) -> tensor<1x1x8x16xf32>
// CHECK:         %[[Y00:.*]] = aotk.conv %x, %[[W00]] strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding explicit groups 1 : (tensor<?x5x6x8xf32>, tensor<1x1x8x16xf32>) -> tensor<?x5x6x16xf32>
// CHECK:         aotk.conv %x, %{{.*}} lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 1] {{.*}} tensor<1x2x8x16xf32>) -> tensor<?x5x6x16xf32>
// CHECK:         aotk.conv %x, %{{.*}} lhs_dilation [1, 1] pad_before [0, 0] pad_after [1, 0] {{.*}} tensor<2x1x8x16xf32>) -> tensor<?x5x6x16xf32>
// CHECK:         aotk.conv %x, %{{.*}} lhs_dilation [1, 1] pad_before [0, 0] pad_after [1, 1] {{.*}} tensor<2x2x8x16xf32>) -> tensor<?x5x6x16xf32>
// CHECK-NOT:     aotk.conv
// CHECK:         "aotk.concat"({{.*}}) <{axis = 3 : i64}> : {{.*}} -> tensor<?x5x6x2x16xf32>
// CHECK:         "aotk.concat"({{.*}}) <{axis = 3 : i64}> : {{.*}} -> tensor<?x5x6x2x16xf32>
// CHECK:         "aotk.concat"({{.*}}) <{axis = 2 : i64}> : {{.*}} -> tensor<?x5x2x6x2x16xf32>
// CHECK:         %[[Y:.*]] = "aotk.reshape"(%{{.*}}) <{shape = array<i64: -1, 10, 12, 16>}> : (tensor<?x5x2x6x2x16xf32>) -> tensor<?x10x12x16xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @transposed(%x: tensor<?x5x6x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<?x10x12x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [2, 2] pad_before [1, 1] pad_after [2, 2] padding explicit groups 1 : (tensor<?x5x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<?x10x12x16xf32>
  func.return %y : tensor<?x10x12x16xf32>
}

// -----

// A 1x1 kernel dilated by 2 reaches only even rows and columns: one conv, the other
// three phases zeros shaped like it; the output's last row and column, past the input,
// are cut off the interleaved 4x6 phases.
// CHECK-LABEL: func.func @one_by_one
// CHECK:         %[[Y:.*]] = aotk.conv %x, %w {{.*}} lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] {{.*}} -> tensor<?x2x3x16xf32>
// CHECK-COUNT-3: "aotk.fill_like"(%[[Y]]) <{value = 0.000000e+00 : f64, dtype = f32}>
// CHECK-NOT:     aotk.conv
// CHECK:         "aotk.reshape"(%{{.*}}) <{shape = array<i64: -1, 4, 6, 16>}>
// CHECK:         "aotk.slice"(%{{.*}}) <{start = array<i64: 0, 0, 0, 0>, stop = array<i64: 9223372036854775807, 3, 5, 9223372036854775807>, {{.*}} -> tensor<?x3x5x16xf32>
func.func @one_by_one(%x: tensor<?x2x3x8xf32>, %w: tensor<1x1x8x16xf32>) -> tensor<?x3x5x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [2, 2] pad_before [0, 0] pad_after [0, 0] padding explicit groups 1 : (tensor<?x2x3x8xf32>, tensor<1x1x8x16xf32>) -> tensor<?x3x5x16xf32>
  func.return %y : tensor<?x3x5x16xf32>
}

// -----

// Left alone: strides besides the dilation, and a dynamic spatial size.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    aotk.conv %x, %w strides [2, 1] dilation [1, 1] lhs_dilation [2, 2]
// CHECK-NEXT:    aotk.conv %z, %w strides [1, 1] dilation [1, 1] lhs_dilation [2, 2]
// CHECK-NEXT:    func.return
func.func @left_alone(%x: tensor<?x5x6x8xf32>, %z: tensor<?x?x6x8xf32>, %w: tensor<3x3x8x16xf32>) -> (tensor<?x5x12x16xf32>, tensor<?x?x12x16xf32>) {
  %a = aotk.conv %x, %w strides [2, 1] dilation [1, 1] lhs_dilation [2, 2] pad_before [1, 1] pad_after [2, 2] padding explicit groups 1 : (tensor<?x5x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<?x5x12x16xf32>
  %b = aotk.conv %z, %w strides [1, 1] dilation [1, 1] lhs_dilation [2, 2] pad_before [1, 1] pad_after [2, 2] padding explicit groups 1 : (tensor<?x?x6x8xf32>, tensor<3x3x8x16xf32>) -> tensor<?x?x12x16xf32>
  func.return %a, %b : tensor<?x5x12x16xf32>, tensor<?x?x12x16xf32>
}
