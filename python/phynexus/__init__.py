"""phynexus: the Phynexus compute runtime from Python.

    import phynexus
    x = phynexus.tensor(numpy_array, device="npu")
    y = phynexus.relu(x @ w + b).numpy()

See docs/python.md. The package binds the public C API (include/phynexus/phynexus.h and the
headers it includes).
"""

from . import _phynexus
# The ops first: a later op whose name is also one of the package's (tensor, device...)
# stays reachable as phynexus.ops.<name> and does not hide the package's function.
from . import ops
from .ops import *  # noqa: F401,F403 - every op of the library, phynexus.matmul, ...
from ._phynexus import (CompilationError, DeviceUnavailableError, Error, IncompatibleError,
                        InternalError, InvalidArgumentError, NotFoundError, OutOfMemoryError,
                        PluginError, UnsupportedError)
from ._dtypes import DType, bf16, dtype, f16, f32, i8, i16, i32, u8
from ._context import Context, default_context, set_log_level
from ._device import Device, device, devices
from ._stream import Event, Stream
from ._comm import Communicator
from ._trace_file import trace
from ._tensor import Tensor, empty, from_dlpack, tensor
from . import cpu, gpu, npu, tpu, vulkan
from . import nn, onnx, safetensors
from ._compile import Compiled, compile, load_compiled  # noqa: A004 - phynexus.compile

api_version = _phynexus.api_version()
