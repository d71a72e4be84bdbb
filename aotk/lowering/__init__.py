"""The lowering passes, one file per pass and named after it, and `pipeline.py`, the
table of stages every compile runs. Kernel emitters the lowering rules call live in
`aotk.kernels`; LLVM IR, object code and the JIT in `aotk.codegen`."""
