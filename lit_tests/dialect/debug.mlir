// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of aotk.print_tensor: printed, parsed back and printed again, the op
// keeps its message and types.

// aotk.print_tensor prints its message and x, and returns x. Quotes, backslashes and
// control characters in the message print as escapes and parse back.

// CHECK-LABEL: func.func @print_tensor(%x: tensor<?x2xf32>, %s: tensor<i32>) -> (tensor<?x2xf32>, tensor<i32>) {
// CHECK-NEXT:    %y = "aotk.print_tensor"(%x) <{message = "x: "}> : (tensor<?x2xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    %z = "aotk.print_tensor"(%s) <{message = "say \22100%\22 \\ then\0A"}> : (tensor<i32>) -> tensor<i32>
// CHECK-NEXT:    func.return %y, %z : tensor<?x2xf32>, tensor<i32>
// CHECK-NEXT:  }
func.func @print_tensor(%x: tensor<?x2xf32>, %s: tensor<i32>) -> (tensor<?x2xf32>, tensor<i32>) {
  %y = "aotk.print_tensor"(%x) <{message = "x: "}> : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %z = "aotk.print_tensor"(%s) <{message = "say \"100%\" \\ then\n"}> : (tensor<i32>) -> tensor<i32>
  func.return %y, %z : tensor<?x2xf32>, tensor<i32>
}
