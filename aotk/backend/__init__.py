"""The Keras 2 backend API, traced into the aotk dialect: `from aotk import backend as K`.

Each module below owns one family of functions and lists them in its `__all__`.
"""

from __future__ import annotations

from aotk import keras_compat as _keras_compat
from aotk import keras_names as _keras_names
from aotk.backend import error_names as _error_names
from aotk.backend import operators as _operators
from aotk.backend.config import *  # noqa: F403
from aotk.backend.conv_ops import *  # noqa: F403
from aotk.backend.ctc import *  # noqa: F403
from aotk.backend.data_ops import *  # noqa: F403
from aotk.backend.functions import *  # noqa: F403
from aotk.backend.keras_contract import *  # noqa: F403
from aotk.backend.loops import *  # noqa: F403
from aotk.backend.math_ops import *  # noqa: F403
from aotk.backend.nn import *  # noqa: F403
from aotk.backend.phase import *  # noqa: F403
from aotk.backend.random_ops import *  # noqa: F403
from aotk.backend.reductions import *  # noqa: F403
from aotk.backend.session import *  # noqa: F403
from aotk.backend.shape_ops import *  # noqa: F403
from aotk.backend.tensors import *  # noqa: F403
from aotk.backend.tile_ops import *  # noqa: F403
from aotk.backend.training import *  # noqa: F403

_error_names.name_errors(globals())
_operators.install()
if _keras_compat.wanted():
    _keras_compat.install()
    _keras_names.expose(globals())
