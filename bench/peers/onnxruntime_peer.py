"""The inference workloads as ONNX graphs, run by ONNX Runtime at full optimization.

Weights are graph initializers, as an exported model has them. ONNX convolutions and
pooling are NCHW, so W5's graph transposes its NHWC input and, before flattening, back
(ORT's layout passes may fold those). W6 uses ONNX's LSTM op, whose gates come in the
order i, o, f, c: its weights are the workload's (i, f, o, g) blocks reordered. ORT's
inference package has no training steps, so W4 and W6's SGD step are not run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import bench_elementwise as chain
from bench import problems as P

onnx: Any = importlib.import_module("onnx")
helper: Any = importlib.import_module("onnx.helper")
numpy_helper: Any = importlib.import_module("onnx.numpy_helper")
ort: Any = importlib.import_module("onnxruntime")
OPSET = 17
Node = tuple[str, list[str], list[str], dict[str, Any]]


def version() -> str:
    return f"onnxruntime {ort.__version__}"


def _session(
    nodes: list[Node], inputs: dict[str, tuple], consts: dict[str, np.ndarray], threads: int
) -> Any:
    """A session of the graph `nodes` with float32 `inputs` (name: shape) and output 'y'."""
    graph = helper.make_graph(
        [helper.make_node(op, i, o, **attrs) for op, i, o, attrs in nodes],
        "workload",
        [helper.make_tensor_value_info(k, onnx.TensorProto.FLOAT, s) for k, s in inputs.items()],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ascontiguousarray(v), k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, ["CPUExecutionProvider"])


def _w1(_: list[np.ndarray]) -> tuple[list[Node], dict[str, np.ndarray]]:
    consts = {"a": np.float32(chain.A), "b": np.float32(chain.B)}
    nodes = [
        ("Mul", ["x0", "a"], ["xa"], {}),
        ("Add", ["xa", "b"], ["xab"], {}),
        ("Tanh", ["xab"], ["t"], {}),
        ("Sigmoid", ["x0"], ["s"], {}),
        ("Mul", ["t", "s"], ["ts"], {}),
        ("Mul", ["x0", "x0"], ["xx"], {}),
        ("Add", ["ts", "xx"], ["y"], {}),
    ]
    return nodes, {k: np.asarray(v) for k, v in consts.items()}


def _mlp(params: list[np.ndarray]) -> tuple[list[Node], dict[str, np.ndarray]]:
    nodes: list[Node] = []
    consts: dict[str, np.ndarray] = {}
    h = "x0"
    for k, (w, b) in enumerate(P.layer_pairs(params)):
        consts[f"w{k}"], consts[f"b{k}"] = w, b
        nodes.append(("Gemm", [h, f"w{k}", f"b{k}"], [f"z{k}"], {}))
        h = f"h{k}"
        nodes.append(("Relu", [f"z{k}"], [h], {}))
    nodes[-1] = ("Softmax", [f"z{len(params) // 2 - 1}"], ["y"], {"axis": -1})
    return nodes, consts


def _cnn(params: list[np.ndarray]) -> tuple[list[Node], dict[str, np.ndarray]]:
    k1, k2, w_out = params
    consts = {
        "k1": k1.transpose(3, 2, 0, 1),
        "k2": k2.transpose(3, 2, 0, 1),
        "w": w_out,
        "flat": np.array([0, -1], np.int64),
    }
    conv = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    nodes: list[Node] = [
        ("Transpose", ["x0"], ["nchw"], {"perm": [0, 3, 1, 2]}),
        ("Conv", ["nchw", "k1"], ["c1"], conv),
        ("Relu", ["c1"], ["r1"], {}),
        ("Conv", ["r1", "k2"], ["c2"], conv),
        ("Relu", ["c2"], ["r2"], {}),
        ("MaxPool", ["r2"], ["p"], {"kernel_shape": [2, 2], "strides": [2, 2]}),
        ("Transpose", ["p"], ["nhwc"], {"perm": [0, 2, 3, 1]}),
        ("Reshape", ["nhwc", "flat"], ["f"], {}),
        ("MatMul", ["f", "w"], ["z"], {}),
        ("Softmax", ["z"], ["y"], {"axis": -1}),
    ]
    return nodes, consts


def _onnx_gates(w: np.ndarray) -> np.ndarray:
    """(in, 4h) blocks i, f, o, g -> ONNX's (1, 4h, in) in the order i, o, f, c."""
    i, f, o, g = np.split(w, 4, axis=1)
    return np.concatenate([i, o, f, g], axis=1).T[None]


def _lstm(params: list[np.ndarray]) -> tuple[list[Node], dict[str, np.ndarray]]:
    w, u = params
    consts = {"W": _onnx_gates(w), "R": _onnx_gates(u)}
    nodes: list[Node] = [
        ("Transpose", ["x0"], ["tbd"], {"perm": [1, 0, 2]}),
        ("LSTM", ["tbd", "W", "R"], ["", "h1"], {"hidden_size": u.shape[0]}),
        ("Squeeze", ["h1", "axis0"], ["y"], {}),
    ]
    return nodes, {**consts, "axis0": np.array([0], np.int64)}


GRAPHS: dict[str, Callable[[list[np.ndarray]], tuple[list[Node], dict[str, np.ndarray]]]] = {
    P.W1: _w1,
    P.W2: lambda _: ([("MatMul", ["x0", "x1"], ["y"], {})], {}),
    P.W3_1: _mlp,
    P.W3_256: _mlp,
    P.W5: _cnn,
    P.W6: _lstm,
    P.W7: lambda _: ([("Softmax", ["x0"], ["y"], {"axis": -1})], {}),
}


def build(problem: P.Problem, threads: int) -> Callable[[], object] | str:
    """A session's run on `problem`'s data, or why ORT has none."""
    if problem.train:
        return "training needs onnxruntime-training"
    nodes, consts = GRAPHS[problem.name](problem.params)
    feeds = {f"x{k}": a for k, a in enumerate(problem.data)}
    session = _session(nodes, {k: a.shape for k, a in feeds.items()}, consts, threads)
    return lambda: session.run(["y"], feeds)[0]
