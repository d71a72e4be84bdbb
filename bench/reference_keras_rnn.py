"""NumPy models of the Keras classifiers `bench_keras_rnn` times: an LSTM or a GRU over
the steps, then Dense(softmax), categorical cross-entropy and plain SGD.

Keras 2.3's cells, written out: the LSTM's gates in the order (i, f, c, o), the GRU's
(z, r, h) with the reset gate applied before its recurrent matmul (`reset_after=False`)
and h = z * h_prev + (1 - z) * candidate; sigmoid gates, tanh. Each side projects the
inputs of every step with one matmul before the loop, as a NumPy user would, then runs
the recurrence; the SGD steps do backpropagation through time by hand.
"""

from __future__ import annotations

import numpy as np

GATES = {"lstm": 4, "gru": 3}


def params(rng: np.random.Generator, kind: str, sizes: tuple[int, int, int]) -> list[np.ndarray]:
    """The cell's kernel, recurrent kernel and bias, then the dense layer's kernel and
    bias, as Keras orders them; sizes = (features, units, classes)."""
    d, h, classes = sizes
    n = GATES[kind] * h
    shapes = [(d, n), (h, n), (n,), (h, classes), (classes,)]
    return [rng.normal(0.0, 0.1, s).astype(np.float32) for s in shapes]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _softmax(logits: np.ndarray) -> np.ndarray:
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _inputs(ps: list[np.ndarray], xs: np.ndarray) -> np.ndarray:
    """Every step's input projection x W + b, (steps, batch, gates)."""
    w, _, b = ps[:3]
    steps = xs.transpose(1, 0, 2)
    return (steps.reshape(-1, w.shape[0]) @ w + b).reshape(*steps.shape[:2], -1)


def _lstm(ps: list[np.ndarray], xs: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """The last h, and each step's (h_prev, c_prev, i, f, g, o)."""
    u = ps[1]
    units = u.shape[0]
    h = c = np.zeros((xs.shape[0], units), np.float32)
    tape = []
    for zx in _inputs(ps, xs):
        z = zx + h @ u
        i, f, o = (_sigmoid(z[:, k * units : (k + 1) * units]) for k in (0, 1, 3))
        g = np.tanh(z[:, 2 * units : 3 * units])
        tape.append((h, c, i, f, g, o))
        c = f * c + i * g
        h = o * np.tanh(c)
    return h, tape


def _gru(ps: list[np.ndarray], xs: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """The last h, and each step's (h_prev, z, r, candidate)."""
    u = ps[1]
    units = u.shape[0]
    h = np.zeros((xs.shape[0], units), np.float32)
    tape = []
    for zx in _inputs(ps, xs):
        zr = _sigmoid(zx[:, : 2 * units] + h @ u[:, : 2 * units])
        z, r = zr[:, :units], zr[:, units:]
        cand = np.tanh(zx[:, 2 * units :] + (r * h) @ u[:, 2 * units :])
        tape.append((h, z, r, cand))
        h = z * h + (1.0 - z) * cand
    return h, tape


CELLS = {"lstm": _lstm, "gru": _gru}


def predict(kind: str, ps: list[np.ndarray], xs: np.ndarray) -> np.ndarray:
    """Class probabilities."""
    h, _ = CELLS[kind](ps, xs)
    return _softmax(h @ ps[3] + ps[4])


def sgd_step(kind: str, ps: list[np.ndarray], xs: np.ndarray, ys: np.ndarray, lr: float) -> float:
    """One SGD step of the model in place; the batch's mean loss before it."""
    h, tape = CELLS[kind](ps, xs)
    p = _softmax(h @ ps[3] + ps[4])
    loss = float(-np.mean(np.log(np.sum(p * ys, axis=1))))
    dlogits = (p - ys) / len(xs)
    dh = dlogits @ ps[3].T
    cell_grads = (_lstm_back if kind == "lstm" else _gru_back)(ps, xs, tape, dh)
    grads = [*cell_grads, h.T @ dlogits, dlogits.sum(axis=0)]
    for param, grad in zip(ps, grads, strict=True):
        param -= lr * grad
    return loss


def _input_grads(xs: np.ndarray, dz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """dW and db from the gradient of the input projection, (steps * batch, gates) in
    step-major order."""
    x_all = xs.transpose(1, 0, 2).reshape(len(dz), -1)
    return x_all.T @ dz, dz.sum(axis=0)


def _lstm_back(
    ps: list[np.ndarray], xs: np.ndarray, tape: list[tuple], dh: np.ndarray
) -> list[np.ndarray]:
    u = ps[1]
    dc, dzs = np.zeros_like(dh), [np.empty(0)] * len(tape)
    for t in reversed(range(len(tape))):
        _, c_prev, i, f, g, o = tape[t]
        tc = np.tanh(f * c_prev + i * g)
        dc = dc + dh * o * (1.0 - tc * tc)
        gates = [dc * g * i * (1 - i), dc * c_prev * f * (1 - f), dc * i * (1 - g * g)]
        dzs[t] = np.concatenate([*gates, dh * tc * o * (1 - o)], axis=1)
        dh, dc = dzs[t] @ u.T, dc * f
    h_all, dz = np.concatenate([step[0] for step in tape]), np.concatenate(dzs)
    dw, db = _input_grads(xs, dz)
    return [dw, h_all.T @ dz, db]


def _gru_back(
    ps: list[np.ndarray], xs: np.ndarray, tape: list[tuple], dh: np.ndarray
) -> list[np.ndarray]:
    u = ps[1]
    units = u.shape[0]
    u_zr, u_h = u[:, : 2 * units], u[:, 2 * units :]
    dzs = [np.empty(0)] * len(tape)
    for t in reversed(range(len(tape))):
        h, z, r, cand = tape[t]
        da_h = dh * (1.0 - z) * (1.0 - cand * cand)
        drh = da_h @ u_h.T
        da_zr = np.concatenate([dh * (h - cand) * z * (1 - z), drh * h * r * (1 - r)], axis=1)
        dzs[t] = np.concatenate([da_zr, da_h], axis=1)
        dh = dh * z + drh * r + da_zr @ u_zr.T
    h_all = np.concatenate([step[0] for step in tape])
    rh_all = np.concatenate([step[2] * step[0] for step in tape])
    dz = np.concatenate(dzs)
    du = np.concatenate([h_all.T @ dz[:, : 2 * units], rh_all.T @ dz[:, 2 * units :]], axis=1)
    dw, db = _input_grads(xs, dz)
    return [dw, du, db]
