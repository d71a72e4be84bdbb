"""aotk's peers on the seven workloads: JAX (XLA), ONNX Runtime and PyTensor.

They run in an interpreter of their own, because PyTensor's numba pins an older llvmlite
than aotk's. Make it once with

    python3 -m venv .venv-peers && .venv-peers/bin/pip install -r bench/peers/requirements.txt

and `python -m bench.bench_workloads --peers` finds it (or name another interpreter in
AOTK_PEER_PYTHON). Each peer and thread count runs in a subprocess pinned to that many
cores, with the peers' own thread settings at that count, and reports its timings as JSON.
Every peer's first result is checked against NumPy; NumPy computes its answer after the
timing, so that its BLAS threads do not spin on a core the timing needs.
"""
