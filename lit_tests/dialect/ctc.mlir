// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the CTC ops: printed, parsed back and printed again, each op keeps
// its properties and types.

// aotk.ctc_forward gives the log-probability of each label prefix state, (batch, 2 * labels
// + 1); aotk.ctc_decode gives a flat f64 state that ctc_decoded_path and
// ctc_decoded_log_probs read.

// CHECK-LABEL: func.func @ctc_forward(%x: tensor<?x?x5xf32>, %labels: tensor<?x3xi32>, %il: tensor<?xi64>, %ll: tensor<?xi8>) -> tensor<?x7xf32> {
// CHECK-NEXT:    %y = "aotk.ctc_forward"(%x, %labels, %il, %ll) : (tensor<?x?x5xf32>, tensor<?x3xi32>, tensor<?xi64>, tensor<?xi8>) -> tensor<?x7xf32>
// CHECK-NEXT:    func.return %y : tensor<?x7xf32>
// CHECK-NEXT:  }
func.func @ctc_forward(%x: tensor<?x?x5xf32>, %labels: tensor<?x3xi32>, %il: tensor<?xi64>, %ll: tensor<?xi8>) -> tensor<?x7xf32> {
  %y = "aotk.ctc_forward"(%x, %labels, %il, %ll) : (tensor<?x?x5xf32>, tensor<?x3xi32>, tensor<?xi64>, tensor<?xi8>) -> tensor<?x7xf32>
  func.return %y : tensor<?x7xf32>
}

// CHECK-LABEL: func.func @ctc_forward_static(%x: tensor<3x6x3xf64>, %labels: tensor<3x4xui8>, %il: tensor<3xui8>, %ll: tensor<3xi32>) -> tensor<3x9xf64> {
// CHECK-NEXT:    %y = "aotk.ctc_forward"(%x, %labels, %il, %ll) : (tensor<3x6x3xf64>, tensor<3x4xui8>, tensor<3xui8>, tensor<3xi32>) -> tensor<3x9xf64>
// CHECK-NEXT:    func.return %y : tensor<3x9xf64>
// CHECK-NEXT:  }
func.func @ctc_forward_static(%x: tensor<3x6x3xf64>, %labels: tensor<3x4xui8>, %il: tensor<3xui8>, %ll: tensor<3xi32>) -> tensor<3x9xf64> {
  %y = "aotk.ctc_forward"(%x, %labels, %il, %ll) : (tensor<3x6x3xf64>, tensor<3x4xui8>, tensor<3xui8>, tensor<3xi32>) -> tensor<3x9xf64>
  func.return %y : tensor<3x9xf64>
}

// CHECK-LABEL: func.func @ctc_forward_grad(%g: tensor<?x7xf32>, %x: tensor<?x?x5xf32>, %labels: tensor<?x3xi32>, %il: tensor<?xi64>, %ll: tensor<?xi64>) -> tensor<?x?x5xf32> {
// CHECK-NEXT:    %dx = "aotk.ctc_forward_grad"(%g, %x, %labels, %il, %ll) : (tensor<?x7xf32>, tensor<?x?x5xf32>, tensor<?x3xi32>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x?x5xf32>
// CHECK-NEXT:    func.return %dx : tensor<?x?x5xf32>
// CHECK-NEXT:  }
func.func @ctc_forward_grad(%g: tensor<?x7xf32>, %x: tensor<?x?x5xf32>, %labels: tensor<?x3xi32>, %il: tensor<?xi64>, %ll: tensor<?xi64>) -> tensor<?x?x5xf32> {
  %dx = "aotk.ctc_forward_grad"(%g, %x, %labels, %il, %ll) : (tensor<?x7xf32>, tensor<?x?x5xf32>, tensor<?x3xi32>, tensor<?xi64>, tensor<?xi64>) -> tensor<?x?x5xf32>
  func.return %dx : tensor<?x?x5xf32>
}

// CHECK-LABEL: func.func @ctc_beam_search(%x: tensor<?x?x4xf32>, %il: tensor<?xi32>) -> (tensor<?xf64>, tensor<?x?xi64>, tensor<?x2xf32>) {
// CHECK-NEXT:    %state = "aotk.ctc_decode"(%x, %il) <{greedy = false, beam_width = 3 : i64, top_paths = 2 : i64}> : (tensor<?x?x4xf32>, tensor<?xi32>) -> tensor<?xf64>
// CHECK-NEXT:    %path = "aotk.ctc_decoded_path"(%state, %x) <{path = 1 : i64, top_paths = 2 : i64}> : (tensor<?xf64>, tensor<?x?x4xf32>) -> tensor<?x?xi64>
// CHECK-NEXT:    %lp = "aotk.ctc_decoded_log_probs"(%state, %x) <{top_paths = 2 : i64}> : (tensor<?xf64>, tensor<?x?x4xf32>) -> tensor<?x2xf32>
// CHECK-NEXT:    func.return %state, %path, %lp : tensor<?xf64>, tensor<?x?xi64>, tensor<?x2xf32>
// CHECK-NEXT:  }
func.func @ctc_beam_search(%x: tensor<?x?x4xf32>, %il: tensor<?xi32>) -> (tensor<?xf64>, tensor<?x?xi64>, tensor<?x2xf32>) {
  %state = "aotk.ctc_decode"(%x, %il) <{greedy = false, beam_width = 3 : i64, top_paths = 2 : i64}> : (tensor<?x?x4xf32>, tensor<?xi32>) -> tensor<?xf64>
  %path = "aotk.ctc_decoded_path"(%state, %x) <{path = 1 : i64, top_paths = 2 : i64}> : (tensor<?xf64>, tensor<?x?x4xf32>) -> tensor<?x?xi64>
  %lp = "aotk.ctc_decoded_log_probs"(%state, %x) <{top_paths = 2 : i64}> : (tensor<?xf64>, tensor<?x?x4xf32>) -> tensor<?x2xf32>
  func.return %state, %path, %lp : tensor<?xf64>, tensor<?x?xi64>, tensor<?x2xf32>
}

// CHECK-LABEL: func.func @ctc_greedy(%x: tensor<3x5x6xf64>, %il: tensor<3xi8>) -> (tensor<18xf64>, tensor<3x5xi64>, tensor<3x1xf64>) {
// CHECK-NEXT:    %state = "aotk.ctc_decode"(%x, %il) <{greedy = true, beam_width = 1 : i64, top_paths = 1 : i64}> : (tensor<3x5x6xf64>, tensor<3xi8>) -> tensor<18xf64>
// CHECK-NEXT:    %path = "aotk.ctc_decoded_path"(%state, %x) <{path = 0 : i64, top_paths = 1 : i64}> : (tensor<18xf64>, tensor<3x5x6xf64>) -> tensor<3x5xi64>
// CHECK-NEXT:    %lp = "aotk.ctc_decoded_log_probs"(%state, %x) <{top_paths = 1 : i64}> : (tensor<18xf64>, tensor<3x5x6xf64>) -> tensor<3x1xf64>
// CHECK-NEXT:    func.return %state, %path, %lp : tensor<18xf64>, tensor<3x5xi64>, tensor<3x1xf64>
// CHECK-NEXT:  }
func.func @ctc_greedy(%x: tensor<3x5x6xf64>, %il: tensor<3xi8>) -> (tensor<18xf64>, tensor<3x5xi64>, tensor<3x1xf64>) {
  %state = "aotk.ctc_decode"(%x, %il) <{greedy = true, beam_width = 1 : i64, top_paths = 1 : i64}> : (tensor<3x5x6xf64>, tensor<3xi8>) -> tensor<18xf64>
  %path = "aotk.ctc_decoded_path"(%state, %x) <{path = 0 : i64, top_paths = 1 : i64}> : (tensor<18xf64>, tensor<3x5x6xf64>) -> tensor<3x5xi64>
  %lp = "aotk.ctc_decoded_log_probs"(%state, %x) <{top_paths = 1 : i64}> : (tensor<18xf64>, tensor<3x5x6xf64>) -> tensor<3x1xf64>
  func.return %state, %path, %lp : tensor<18xf64>, tensor<3x5xi64>, tensor<3x1xf64>
}
