"""Graph passes on the aotk dialect (`aotk-simplify`, `aotk-fuse`) and the generic
cleanups every stage runs (`aotk-canonicalize`, `aotk-cse`, `aotk-check-stage`). The
registry of every pass by name is `aotk.lowering.pipeline.ALL_PASSES`."""
