"""phynexus.nn: layers over the library's ops, run eagerly or recorded into a graph
(phynexus.compile). Parameters are f32 tensors, initialized as PyTorch does (uniform in
+-1/sqrt(fan_in)) from numpy's generator seeded by the seed argument; model.to(device)
moves them. state_dict() and load_state_dict() name them by their path ("0.weight");
save() and load() keep them in a safetensors file (phynexus.safetensors)."""

import math

import numpy as np

from . import _dtypes, _phynexus, ops
from ._device import device as _device
from ._tensor import tensor as _tensor
from ._trace import Symbol


class Module:
    """A layer: its parameters (tensors) and child modules, in the order they were set."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_children", {})

    def __setattr__(self, name, value):
        if isinstance(value, _phynexus.Tensor):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._children[name] = value
        object.__setattr__(self, name, value)

    def forward(self, *inputs):
        raise NotImplementedError(type(self).__name__ + ".forward")

    def __call__(self, *inputs):
        tracer = next((x.tracer for x in inputs if isinstance(x, Symbol)), None)
        if tracer is None:
            return self.forward(*inputs)
        # Recording (phynexus.compile): the nodes are named after the module's path.
        tracer.enter(self.__dict__.get("_path", ""))
        try:
            return self.forward(*inputs)
        finally:
            tracer.leave()

    def named_modules(self, prefix=""):
        """(path, module) of this module ("" for itself) and every descendant."""
        yield prefix.rstrip("."), self
        for name, child in self._children.items():
            yield from child.named_modules(f"{prefix}{name}.")

    def named_parameters(self, prefix=""):
        for name, value in self._parameters.items():
            yield prefix + name, value
        for name, child in self._children.items():
            yield from child.named_parameters(f"{prefix}{name}.")

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def to(self, device):
        """Moves every parameter to device (a Device or a name: "npu", "tpu:0", ...);
        returns the module."""
        target = _device(device)
        for name, value in list(self._parameters.items()):
            setattr(self, name, value.to(target))
        for child in self._children.values():
            child.to(target)
        return self

    def state_dict(self):
        """{name: tensor} of every parameter."""
        return dict(self.named_parameters())

    def load_state_dict(self, state):
        """Takes each parameter's values from state ({name: array or tensor}), on the
        parameter's device. Every name must be there with the parameter's shape."""
        own = self.state_dict()
        missing = sorted(set(own) - set(state))
        unexpected = sorted(set(state) - set(own))
        if missing or unexpected:
            raise _phynexus.InvalidArgumentError(
                f"phynexus.nn: load_state_dict: missing {missing}, unexpected {unexpected}")
        for name, current in own.items():
            value = state[name]
            shape = tuple(value.shape)
            if shape != current.shape:
                raise _phynexus.InvalidArgumentError(
                    f"phynexus.nn: {name} has shape {shape}, the model {current.shape}")
        for name, current in own.items():
            value = state[name]
            array = value.numpy() if isinstance(value, _phynexus.Tensor) else np.asarray(value)
            owner, attribute = self._owner_of(name)
            setattr(owner, attribute, _tensor(array, device=current.device, dtype=current.dtype))

    def _owner_of(self, name):
        owner = self
        *path, attribute = name.split(".")
        for part in path:
            owner = owner._children[part]
        return owner, attribute

    def save(self, path):
        from . import safetensors
        safetensors.save(self.state_dict(), path)

    def load(self, path):
        from . import safetensors
        self.load_state_dict(safetensors.load(path))
        return self


def _uniform(shape, fan_in, seed):
    bound = 1.0 / math.sqrt(fan_in)
    return np.random.default_rng(seed).uniform(-bound, bound, shape).astype(np.float32)


def _parameter(array, device):
    return _tensor(array, device=device if device is not None else "cpu", dtype=_dtypes.f32)


class Linear(Module):
    """y = x W^T + b: weight [out_features, in_features], bias [out_features]."""

    def __init__(self, in_features, out_features, bias=True, device=None, seed=0):
        super().__init__()
        self.weight = _parameter(_uniform((out_features, in_features), in_features, seed), device)
        self.bias = _parameter(_uniform((out_features,), in_features, seed + 1), device) \
            if bias else None

    def forward(self, x):
        return ops.matmul(x, self.weight, self.bias, transpose_b=True)


class ReLU(Module):
    def forward(self, x):
        return ops.relu(x)


class GELU(Module):
    def forward(self, x):
        return ops.gelu(x)


class SiLU(Module):
    def forward(self, x):
        return ops.silu(x)


class LayerNorm(Module):
    """Over the last dimension, of size normalized_shape; gamma 1, beta 0 at first."""

    def __init__(self, normalized_shape, eps=1e-5, device=None):
        super().__init__()
        self.eps = eps
        self.weight = _parameter(np.ones(normalized_shape, np.float32), device)
        self.bias = _parameter(np.zeros(normalized_shape, np.float32), device)

    def forward(self, x):
        return ops.layer_norm(x, self.weight, self.bias, epsilon=self.eps)


class RMSNorm(Module):
    def __init__(self, normalized_shape, eps=1e-5, device=None):
        super().__init__()
        self.eps = eps
        self.weight = _parameter(np.ones(normalized_shape, np.float32), device)

    def forward(self, x):
        return ops.rms_norm(x, self.weight, epsilon=self.eps)


class Conv2d(Module):
    """NCHW; weight [out_channels, in_channels / groups, kh, kw]."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, device=None, seed=0):
        super().__init__()
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
        fan_in = in_channels // groups * kh * kw
        self.options = {"stride": stride, "padding": padding, "dilation": dilation,
                        "groups": groups}
        self.weight = _parameter(
            _uniform((out_channels, in_channels // groups, kh, kw), fan_in, seed), device)
        self.bias = _parameter(_uniform((out_channels,), fan_in, seed + 1), device) \
            if bias else None

    def forward(self, x):
        return ops.conv2d(x, self.weight, self.bias, **self.options)


class MultiheadAttention(Module):
    """Self-attention of x [B, S, E] with num_heads heads of E / num_heads features.

    The projections are kept per head so that every step is an op of the library, with
    no reshape: q = x @ Wq [H, 1, E, D] gives [H, B, S, D] (batch dimensions broadcast),
    transposed to [B, H, S, D]; attention; o [B, H, S, D] @ Wo [H, D, E] gives each
    head's share [B, H, S, E], summed over H. state_dict names: q_weight, k_weight,
    v_weight [H, 1, E, D], q_bias, k_bias, v_bias [H, 1, 1, D], out_weight [H, D, E],
    out_bias [E]."""

    def __init__(self, embed_dim, num_heads, causal=False, device=None, seed=0):
        super().__init__()
        if embed_dim % num_heads:
            raise _phynexus.InvalidArgumentError(
                f"phynexus.nn.MultiheadAttention: {num_heads} heads do not divide {embed_dim}")
        head_dim = embed_dim // num_heads
        self.causal = causal
        for i, name in enumerate(("q", "k", "v")):
            setattr(self, f"{name}_weight", _parameter(
                _uniform((num_heads, 1, embed_dim, head_dim), embed_dim, seed + 2 * i), device))
            setattr(self, f"{name}_bias", _parameter(
                _uniform((num_heads, 1, 1, head_dim), embed_dim, seed + 2 * i + 1), device))
        self.out_weight = _parameter(_uniform((num_heads, head_dim, embed_dim), embed_dim,
                                              seed + 6), device)
        self.out_bias = _parameter(_uniform((embed_dim,), embed_dim, seed + 7), device)

    def forward(self, x):
        def heads(weight, bias):
            return ops.transpose(ops.matmul(x, weight, bias), perm=(1, 0, 2, 3))
        q = heads(self.q_weight, self.q_bias)
        k = heads(self.k_weight, self.k_bias)
        v = heads(self.v_weight, self.v_bias)
        o = ops.attention(q, k, v, mask="causal" if self.causal else "none")
        shares = ops.matmul(o, self.out_weight)
        return ops.reduce_sum(shares, axes=[1]) + self.out_bias


class Sequential(Module):
    """The modules applied in order; they are named "0", "1", ..."""

    def __init__(self, *modules):
        super().__init__()
        for index, module in enumerate(modules):
            setattr(self, str(index), module)

    def __getitem__(self, index):
        return list(self._children.values())[index]

    def __len__(self):
        return len(self._children)

    def forward(self, x):
        for module in self._children.values():
            x = module(x)
        return x
