#!/usr/bin/env bash
# What the Keras tests need beyond the `keras` extra, installed into the active venv under
# $VIRTUAL_ENV/aotk-keras (the README's test command runs it once, before pytest):
#   keras-2.2.4/   Keras 2.2.4, next to the extra's 2.3.1; a subprocess puts it first on
#                  PYTHONPATH to run Keras 2.2.4 programs
#   suite-2.2.4/, suite-2.3.1/   tests/keras/backend/ of each Keras sdist (backend_test.py):
#                  Keras's own backend test suite, run against aotk by test_backend_suite.py
set -euo pipefail
root="$(python -c 'import sys; print(sys.prefix)')/aotk-keras"
mkdir -p "$root/sdist"
if [[ ! -d "$root/keras-2.2.4/keras" ]]; then
  pip install -q --no-deps --target "$root/keras-2.2.4" keras==2.2.4
fi
for version in 2.2.4 2.3.1; do
  suite="$root/suite-$version"
  [[ -f "$suite/backend_test.py" ]] && continue
  pip download -q --no-deps --no-binary :all: -d "$root/sdist" "keras==$version"
  tar -xzf "$root/sdist/Keras-$version.tar.gz" -C "$root/sdist" \
    "Keras-$version/tests/keras/backend"
  rm -rf "$suite"
  mv "$root/sdist/Keras-$version/tests/keras/backend" "$suite"
  printf '[pytest]\n' >"$suite/pytest.ini"  # the suite's own rootdir, not aotk's settings
done
# layers-2.3.1/: Keras 2.3.1's own tests of its layers, activations, losses, training loop
# (engine/), metrics and Sequential model, run against aotk by test_layer_suites.py (with
# their conftest, which clears the session on TF only)
layers="$root/layers-2.3.1"
if [[ ! -f "$layers/keras/engine/test_training.py" ]]; then
  tests="Keras-2.3.1/tests"
  [[ -f "$root/sdist/Keras-2.3.1.tar.gz" ]] ||
    pip download -q --no-deps --no-binary :all: -d "$root/sdist" "keras==2.3.1"
  tar -xzf "$root/sdist/Keras-2.3.1.tar.gz" -C "$root/sdist" "$tests/conftest.py" \
    "$tests/keras/layers" "$tests/keras/activations_test.py" "$tests/keras/losses_test.py" \
    "$tests/keras/engine" "$tests/keras/metrics_functional_test.py" \
    "$tests/keras/test_sequential_model.py"
  rm -rf "$layers"
  mv "$root/sdist/$tests" "$layers"
  printf '[pytest]\n' >"$layers/pytest.ini"
fi
