#!/usr/bin/env bash
# Train an MLP with aotk, export it as a C library, classify the test set from C, and
# check that C and Python agree on the accuracy.
#   examples/deploy/run.sh [OUT_DIR]     (default: examples/deploy/build)
# Environment: PYTHON (default python3), CC (default cc), WEIGHTS=external to export the
# weights to OUT_DIR/mlp.weights and have classify load them at run time.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/build}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
python="${PYTHON:-python3}"
cc="${CC:-cc}"
weights="${WEIGHTS:-embedded}"

echo "== training and exporting (python: $python)"
"$python" "$here/train.py" --out "$out" --weights "$weights"

echo "== building classify against $out"
if command -v make >/dev/null 2>&1; then
  make --no-print-directory -C "$here" OUT="$out" CC="$cc" all static
else
  "$cc" -O2 -std=c99 "$here/classify.c" -I"$out" -L"$out" -lmlp -Wl,-rpath,"$out" -lm -lpthread \
    -o "$out/classify"
  "$cc" -O2 -std=c99 "$here/classify.c" -I"$out" "$out/libmlp.a" -lm -lpthread \
    -o "$out/classify-static"
fi

weights_arg=()
if [[ "$weights" == external ]]; then
  weights_arg=("$out/mlp.weights")
fi
python_accuracy="$(cat "$out/python_accuracy.txt")"
status=0
for program in classify classify-static; do
  echo "== $program"
  c_accuracy="$("$out/$program" "$out/test_set.bin" ${weights_arg[@]+"${weights_arg[@]}"})"
  echo "C      $c_accuracy"
  echo "Python $python_accuracy"
  if [[ "$c_accuracy" != "$python_accuracy" ]]; then
    echo "run.sh: $program disagrees with Python: '$c_accuracy' != '$python_accuracy'" >&2
    status=1
  fi
done
if [[ $status -eq 0 ]]; then
  echo "OK: the exported C model and aotk in Python agree"
fi
exit $status
