"""The numpy array types the engine hands between its functions: annotations only.

Per node (or per slot of a view, or per domain of a topology key): ``IntArray``
holds counts, domain ids and scores (int64), ``BoolArray`` masks, ``CodeArray``
a filter's reason codes (a small integer type: int8 or int16), ``FloatArray``
the float64 intermediates of a score.
"""
from typing import Any, TypeAlias

import numpy as np
from numpy.typing import NDArray

IntArray: TypeAlias = NDArray[np.int64]
BoolArray: TypeAlias = NDArray[np.bool_]
CodeArray: TypeAlias = NDArray[np.integer[Any]]
FloatArray: TypeAlias = NDArray[np.float64]
