"""NumPy references for the workloads `bench.bench_workloads` times that no older module has.

W5, the CNN of `bench.workloads.w5_cnn` (convolutions as im2col + one matmul); W6, the LSTM
of `bench.workloads._lstm` (gates i, f, o, g; no bias; zero initial state), forward and an
SGD step by hand-written backpropagation through time; W7, a row softmax.
"""

from __future__ import annotations

import numpy as np


def softmax_rows(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum along the last axis."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def conv3x3_same(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """NHWC cross-correlation with a (3, 3, C, F) kernel, stride 1, zero padding 'same'."""
    n, h, w, c = x.shape
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))
    cols = windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, 9 * c)  # (kh, kw, c) order
    return (cols @ k.reshape(9 * c, -1)).reshape(n, h, w, -1)


def maxpool2x2(x: np.ndarray) -> np.ndarray:
    n, h, w, c = x.shape
    return x.reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def cnn(x: np.ndarray, k1: np.ndarray, k2: np.ndarray, w_out: np.ndarray) -> np.ndarray:
    """conv3x3 + relu, conv3x3 + relu, maxpool 2x2, flatten, dense, softmax."""
    h = np.maximum(conv3x3_same(x, k1), 0.0)
    h = np.maximum(conv3x3_same(h, k2), 0.0)
    h = maxpool2x2(h).reshape(len(x), -1)
    return softmax_rows(h @ w_out)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def lstm_forward(xs: np.ndarray, w: np.ndarray, u: np.ndarray, keep: bool = False):
    """Last h of an LSTM over xs (batch, steps, features); with `keep`, also what BPTT needs:
    the inputs h_{t-1}, c_{t-1} and the gates (i, f, o, g) of every step."""
    b, hid = xs.shape[0], u.shape[0]
    h = np.zeros((b, hid), xs.dtype)
    c = np.zeros_like(h)
    tape = []
    for t in range(xs.shape[1]):
        z = xs[:, t] @ w + h @ u
        i, f, o = (_sigmoid(z[:, k * hid : (k + 1) * hid]) for k in range(3))
        g = np.tanh(z[:, 3 * hid :])
        if keep:
            tape.append((h, c, i, f, o, g))
        c = f * c + i * g
        h = o * np.tanh(c)
    return (h, c, tape) if keep else h


def lstm_sgd(
    xs: np.ndarray, w: np.ndarray, u: np.ndarray, lr: float = 0.01
) -> tuple[float, np.ndarray, np.ndarray]:
    """loss = mean(square(last h)); return it and W, U after one SGD step (BPTT)."""
    h, c, tape = lstm_forward(xs, w, u, keep=True)
    dh = 2.0 * h / h.size
    dc = np.zeros_like(c)
    dzs = [np.empty(0)] * len(tape)
    for t in reversed(range(len(tape))):
        _, c_prev, i, f, o, g = tape[t]
        tc = np.tanh(c)
        dc = dc + dh * o * (1.0 - tc * tc)
        dz = np.concatenate(
            [
                dc * g * i * (1 - i),
                dc * c_prev * f * (1 - f),
                dh * tc * o * (1 - o),
                dc * i * (1 - g * g),
            ],
            axis=1,
        )
        dzs[t] = dz
        dh, dc, c = dz @ u.T, dc * f, c_prev
    # the weight gradients as two GEMMs over all steps, not 2 x 50 small ones
    dz_all = np.concatenate(dzs)  # (steps * batch, 4 * hid), step-major
    x_all = xs.transpose(1, 0, 2).reshape(-1, xs.shape[2])
    h_all = np.concatenate([step[0] for step in tape])
    loss = float(np.mean(h * h))
    return loss, w - lr * (x_all.T @ dz_all), u - lr * (h_all.T @ dz_all)
