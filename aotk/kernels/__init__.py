"""Kernel emitters and micro-kernels.

Emitters build loop nests on the `Kernel` builder (`kernel.py`) for the ops' lowering
rules: matmul, conv and its window geometry, vector math, philox, ctc, elementwise nests.
`dim_arith.py` is the interface shape rules compute dims on, at trace time or in a kernel.

Micro-kernels are hot inner routines built once per target and called by generated code.

A lowering rule that would otherwise emit thousands of ops at every call site (the
register-tiled float matmul) emits one call to a micro-kernel instead. Each micro-kernel
is an ordinary aotk function with dynamic dims, lowered by the same passes, compiled once
per (name, CPU, features) and kept in the on-disk cache; in process it is linked once and
every model's code resolves it by name. Exported libraries link their own copy.
See `library.py` for the registry and the calling convention; `aotk.micro_kernels` builds,
caches and links them (it drives the pipeline, so it sits above this package).
"""
