"""Native code: LLVM IR text from the llvm stage, LLVM's optimizer and code generator
(`llvm_ir`), a large module compiled in parts on several cores (`llvm_split`), and the
in-process JIT (`jit`, `jit_print`)."""
