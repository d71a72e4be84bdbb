// aotk's function attributes tell passes which argument a variable's update overwrites,
// which arguments may alias and how many inputs an entry has; one that does not fit its
// function is an error at its function, before any pass indexes by it.
// With --verify-diagnostics each chunk's error is printed; without, the first exits 1.
// RUN: aotk-opt %s --split-input-file --verify-diagnostics -p aotk-early-updates 2>&1 | filecheck %s
// RUN: not aotk-opt %s --split-input-file -p aotk-early-updates 2>&1 | filecheck %s --check-prefix=FIRST

// FIRST:      error: function @input_out_of_range
// FIRST-NOT:  error

// CHECK-NOT:  Traceback
// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @input_out_of_range: attribute aotk.updates: input 7 is out of range [-1, 2)
func.func @input_out_of_range(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {aotk.updates = array<i64: 0, 7>} {
  %new = "aotk.sub"(%w, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %new : tensor<4xf32>
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @output_updated_twice: attribute aotk.updates: output 0 is out of range [0, 1) or updated twice
func.func @output_updated_twice(%x: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> attributes {aotk.updates = array<i64: 0, 1, 0, 0>} {
  %new = "aotk.sub"(%w, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %new : tensor<4xf32>
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @type_differs: attribute aotk.updates: output 0 (tensor<4xf32>) cannot update input 1 (tensor<4xf64>)
func.func @type_differs(%x: tensor<4xf32>, %w: tensor<4xf64>) -> tensor<4xf32> attributes {aotk.updates = array<i64: 0, 1>} {
  func.return %x : tensor<4xf32>
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @odd_pairs: attribute aotk.updates must hold (output, input) pairs, got 3 integers
func.func @odd_pairs(%x: tensor<4xf32>) -> tensor<4xf32> attributes {aotk.updates = array<i64: 0, 0, 1>} {
  func.return %x : tensor<4xf32>
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @may_alias_out_of_range: attribute aotk.may_alias: argument 3 out of range [0, 1)
func.func @may_alias_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> attributes {aotk.may_alias = array<i64: 3>} {
  func.return %x : tensor<4xf32>
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @names_not_strings: attribute aotk.arg_names must be an array of strings, got [1 : i64]
func.func @names_not_strings(%x: tensor<4xf32>) -> tensor<4xf32> attributes {aotk.arg_names = [1]} {
  func.return %x : tensor<4xf32>
}
// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @kernel_counts_too_many: attribute aotk.kernel must be [inputs, outputs] counting at most the 2 arguments, got [2, 1]
func.func @kernel_counts_too_many(%x: memref<4xf32>, %y: memref<4xf32>) attributes {aotk.kernel = array<i64: 2, 1>} {
  func.return
}

// -----

// CHECK:      bad_metadata.mlir:[[# @LINE + 2]]:1
// CHECK:      error: function @one_class_short: attribute aotk.alias_classes must have one class per argument (2), got 1
func.func @one_class_short(%x: memref<4xf32>, %y: memref<4xf32>) attributes {aotk.alias_classes = array<i64: -1>} {
  func.return
}
// CHECK-NOT:  Traceback
