#!/usr/bin/env bash
# Train a Keras model on aotk, export it as a C library, classify the test set from C
# (with ../deploy/classify.c), and check that C and Keras report the same accuracy.
#   examples/keras/run.sh [OUT_DIR]     (default: examples/keras/build)
# Environment: PYTHON (default python3; needs the `keras` extra), CC (default cc).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cc="${CC:-cc}"
model=(-DMODEL_HEADER='"digits.h"' -DMODEL_RUN=digits_run -DMODEL_CREATE=digits_create)

echo "== training with Keras on aotk and exporting"
KERAS_BACKEND=aotk.backend "${PYTHON:-python3}" "$here/train.py" --out "$out"

echo "== building classify against $out"
"$cc" -O2 -std=c99 -Wall "${model[@]}" "$here/../deploy/classify.c" -I"$out" -L"$out" \
  -ldigits -Wl,-rpath,"$out" -lm -lpthread -o "$out/classify"
"$cc" -O2 -std=c99 -Wall "${model[@]}" "$here/../deploy/classify.c" -I"$out" \
  "$out/libdigits.a" -lm -lpthread -o "$out/classify-static"

keras_accuracy="$(cat "$out/python_accuracy.txt")"
for program in classify classify-static; do
  c_accuracy="$("$out/$program" "$out/test_set.bin")"
  echo "$program: C $c_accuracy, Keras $keras_accuracy"
  if [[ "$c_accuracy" != "$keras_accuracy" ]]; then
    echo "run.sh: $program disagrees with Keras" >&2
    exit 1
  fi
done
echo "OK: the exported C model and Keras agree"
