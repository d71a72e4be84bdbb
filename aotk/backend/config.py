"""Backend configuration: floatx, epsilon, image data format, and the backend's name.

On import the defaults are overridden by `$KERAS_HOME/keras.json` (default `~/.keras`, or
`/tmp/.keras` when the home directory is not writable, as in Keras), whose "backend" key is
ignored, and then by the environment variables AOTK_FLOATX and AOTK_IMAGE_DATA_FORMAT. A
missing file means the defaults; aotk never writes it. Bad values raise a ValueError naming
the file or variable, the key, the value and the allowed values.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import sys
from collections.abc import Mapping
from typing import Any

from aotk import dtypes

_FLOATS = ("float16", "float32", "float64")
_FORMATS = ("channels_last", "channels_first")
_ORDERINGS = {"tf": "channels_last", "th": "channels_first"}
_DEFAULTS: dict[str, Any] = {
    "floatx": "float32",
    "epsilon": 1e-7,
    "image_data_format": "channels_last",
}

_state: dict[str, Any] = dict(_DEFAULTS)


def _host() -> Any:
    """Keras's `keras.backend.common` when Keras runs on aotk: it owns the settings then,
    so K.set_floatx through Keras and through aotk change the same value."""
    loader = sys.modules.get("keras.backend.load_backend")
    if loader is None or getattr(loader, "_BACKEND", None) != "aotk.backend":
        return None
    return sys.modules.get("keras.backend.common")


def _get(key: str) -> Any:
    host = _host()
    return getattr(host, key)() if host is not None else _state[key]


def _set(key: str, value: Any) -> None:
    _state[key] = value
    host = _host()
    if host is not None:
        getattr(host, f"set_{key}")(value)


def backend() -> str:
    """The name of this backend."""
    return "aotk"


def floatx() -> str:
    """The default float type, as a string."""
    return _get("floatx")


def set_floatx(floatx: str) -> None:
    """Set the default float type: 'float16', 'float32' or 'float64'."""
    if not isinstance(floatx, str) or floatx not in _FLOATS:
        raise ValueError(
            f"K.set_floatx: unknown floatx type {floatx!r}; expected one of {', '.join(_FLOATS)}"
        )
    _set("floatx", floatx)


def epsilon() -> float:
    """The fuzz factor used in numeric expressions."""
    return _get("epsilon")


def set_epsilon(e: float) -> None:
    """Set the fuzz factor used in numeric expressions."""
    if isinstance(e, bool) or not isinstance(e, numbers.Real):
        raise TypeError(f"K.set_epsilon: expected a float, got {e!r}")
    _set("epsilon", float(e))


def image_data_format() -> str:
    """The default image data format: 'channels_last' or 'channels_first'."""
    return _get("image_data_format")


def set_image_data_format(data_format: str) -> None:
    """Set the default image data format."""
    _set("image_data_format", check_data_format(data_format, "K.set_image_data_format"))


def image_dim_ordering() -> str:
    """The old name of the image data format: 'tf' (channels_last) or 'th' (channels_first)."""
    return "th" if image_data_format() == "channels_first" else "tf"


def set_image_dim_ordering(dim_ordering: str) -> None:
    """Set the image data format by its old name: 'tf' or 'th'."""
    if not isinstance(dim_ordering, str) or dim_ordering not in _ORDERINGS:
        raise ValueError(
            f"K.set_image_dim_ordering: unknown dim_ordering {dim_ordering!r}; "
            "expected 'tf' (channels_last) or 'th' (channels_first)"
        )
    _set("image_data_format", _ORDERINGS[dim_ordering])


def check_data_format(data_format: str | None, where: str) -> str:
    """Resolve None to the default and reject unknown formats."""
    if data_format is None:
        return image_data_format()
    if data_format not in _FORMATS:
        raise ValueError(
            f"{where}: unknown data_format {data_format!r}; "
            "expected 'channels_last' or 'channels_first'"
        )
    return data_format


def resolve_dtype(dtype: object, where: str) -> str:
    """A Keras dtype name; None means floatx."""
    return floatx() if dtype is None else dtypes.normalize(dtype, f"{where}: dtype")


def config_path(environ: Mapping[str, str] | None = None) -> str:
    """Where keras.json is read from."""
    env = os.environ if environ is None else environ
    if env.get("KERAS_HOME"):
        return os.path.join(env["KERAS_HOME"], "keras.json")
    home = os.path.expanduser("~")
    if not os.access(home, os.W_OK):
        home = "/tmp"
    return os.path.join(home, ".keras", "keras.json")


def load_config(environ: Mapping[str, str] | None = None) -> None:
    """Reset the configuration from the defaults, keras.json and the AOTK_* variables."""
    env = os.environ if environ is None else environ
    settings = dict(_DEFAULTS)
    path = config_path(env)
    if os.path.isfile(path):
        settings.update(_read_file(path))
    for key, var, allowed in (
        ("floatx", "AOTK_FLOATX", _FLOATS),
        ("image_data_format", "AOTK_IMAGE_DATA_FORMAT", _FORMATS),
    ):
        if env.get(var):
            settings[key] = _choice(env[var], allowed, f"environment variable {var}")
    for key, value in settings.items():
        _set(key, value)


def _read_file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as err:
        raise ValueError(f"aotk: cannot read the Keras config {path}: {err}") from None
    if not isinstance(config, dict):
        raise ValueError(f"aotk: {path} must hold a JSON object, got {type(config).__name__}")
    where = f"{path}: key"
    out: dict[str, Any] = {}
    if "floatx" in config:
        out["floatx"] = _choice(config["floatx"], _FLOATS, f"{where} 'floatx'")
    if "epsilon" in config:
        out["epsilon"] = _epsilon(config["epsilon"], f"{where} 'epsilon'")
    if "image_data_format" in config:
        fmt = config["image_data_format"]
        out["image_data_format"] = _choice(fmt, _FORMATS, f"{where} 'image_data_format'")
    elif "image_dim_ordering" in config:
        order = _choice(config["image_dim_ordering"], ("tf", "th"), f"{where} 'image_dim_ordering'")
        out["image_data_format"] = _ORDERINGS[order]
    return out


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(
            f"aotk: {what} has value {value!r}; expected one of {', '.join(map(repr, allowed))}"
        )
    return value


def _epsilon(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"aotk: {what} has value {value!r}; expected a finite number")
    return float(value)


load_config()

__all__ = [
    "backend",
    "epsilon",
    "floatx",
    "image_data_format",
    "image_dim_ordering",
    "set_epsilon",
    "set_floatx",
    "set_image_data_format",
    "set_image_dim_ordering",
]
