# SPDX-License-Identifier: Apache-2.0
"""PyTorch integration: the calls as ``torch.library`` custom ops, for torch.compile and autograd.

Importing this module (which ``import elementwise`` arranges by itself, see ``_torch_hook``) does two
things:

* It registers each call as a custom op in the ``elementwise`` namespace, with a fake implementation
  (the output's shape, dtype and strides, for tracing) and, for add, mul, relu, scale_add and cast
  (to a floating dtype) and their lists, an autograd formula::

      torch.ops.elementwise.add(a, b)                  # a new tensor
      torch.ops.elementwise.add_out(a, b, out)         # writes out, returns None
      torch.ops.elementwise.cast(x, torch.float16)
      torch.ops.elementwise.scale_add(alpha, a, b)     # alpha * a + b
      torch.ops.elementwise.add_batched([a0, a1], [b0, b1])
      torch.ops.elementwise.quantize(x, torch.float8_e4m3fn, scale)   # scaled casts: no autograd
      torch.ops.elementwise.dequantize(q, torch.bfloat16, scale_inv)
      torch.ops.elementwise.amax(x)                    # a shape () float32 tensor
      torch.ops.elementwise.quantize_blocks(x, torch.float8_e4m3fn, "mx")      # block-scaled: (q, scales)
      torch.ops.elementwise.dequantize_blocks(q, scales, torch.bfloat16, "mx")

  The ops are also this module's attributes (``elementwise.torch.add(a, b)``): called eagerly they
  record autograd, where a direct ``ew.add(a, b)`` does not.

* It tells torch.compile how to trace the module-level calls of ``elementwise`` (``ew.add``,
  ``ew.cast``, the lists, ...), which are C functions it cannot look into: each is substituted in the
  graph by the custom op (``torch.compiler.substitute_in_graph``), so a function calling
  ``ew.add(a, b, out=o)`` compiles with ``fullgraph=True`` and gives eager's bits. Outside
  torch.compile a direct call stays the extension's own fast path; these functions are not used.

Every op runs the module's call itself (``ew.add(a, b, out=out)``): one implementation, one set of
semantics (docs/semantics.md), the library's errors. An op that allocates makes its output exactly
as the direct call does (``_like``), so the fake implementations give the strides eager gives.

The scaled casts (quantize, dequantize, amax) are registered in their functional forms only, with
fake implementations and no autograd; under torch.compile call these ops: the module's
``ew.quantize``, ``ew.dequantize`` and ``ew.amax`` (whose amax=, accumulate= and out= write device
scalars in place) have no substitute and break the graph. So are the block-scaled casts
(quantize_blocks, returning (q, scales), and dequantize_blocks): their ops allocate what the direct
calls allocate for out=None and scales=None, and ``ew.quantize_blocks`` / ``ew.dequantize_blocks``
break the graph.

Not covered: ``Kernel`` calls under torch.compile (a graph break: compiled code is no op argument;
``kernel_op`` makes a Kernel an op to call instead), ``stream=`` under torch.compile (use
``torch.cuda.stream``), the deprecated outputs-first forms and ``outs`` lists holding None under
torch.compile, and autograd through the ``*_out`` ops (PyTorch's own out= ops have none either).
"""

from typing import List, Optional, Tuple

import torch
from torch.types import Number

import elementwise as ew

__all__ = [
    "add", "add_out", "mul", "mul_out", "relu", "relu_out", "cast", "cast_out", "scale_add", "scale_add_out",
    "add_batched", "add_batched_out", "mul_batched", "mul_batched_out", "relu_batched", "relu_batched_out",
    "cast_batched", "cast_batched_out", "scale_add_batched", "scale_add_batched_out", "quantize", "dequantize",
    "amax", "quantize_blocks", "dequantize_blocks", "kernel_op",
]

Tensor = torch.Tensor


def _as_torch_dtype(dtype) -> torch.dtype:
    """torch's dtype of any dtype the package reads (a DType, its int, a name), by the name the package
    gives each framework."""
    return getattr(torch, ew._FRAMEWORK_NAME[ew._as_dtype(dtype)])


# ---- outputs: the direct call's allocation, shared by every op and its fake ----

def _like(x: Tensor, shape, dtype: torch.dtype) -> Tensor:
    """The output the direct call makes for out=None (the 1.1 binding's rule, kept by the
    extension): ``empty_like(x)`` (x's memory layout) when the result has x's shape, else a
    C-contiguous tensor on x's device; of ``dtype``. Run on fake tensors it gives the same strides."""
    if tuple(x.shape) == tuple(shape):
        return torch.empty_like(x, dtype=dtype)
    return torch.empty(shape, dtype=dtype, device=x.device)


def _binary_result(a: Tensor, b: Tensor) -> Tensor:
    # Inputs of one dtype (the library refuses others); NumPy's broadcast of the two shapes.
    return _like(a, torch.broadcast_shapes(a.shape, b.shape), a.dtype)


def _likes(xs: List[Tensor], dtype=None) -> List[Tensor]:
    """A list op's outputs: each entry like its input, of ``dtype`` (else the input's)."""
    return [_like(x, x.shape, x.dtype if dtype is None else dtype) for x in xs]


# ---- the per-tensor ops ----

@torch.library.custom_op("elementwise::add", mutates_args=())
def add(a: Tensor, b: Tensor) -> Tensor:
    """a + b, broadcast (NumPy's rules); bool: OR, integers wrap."""
    return ew.add(a, b, out=_binary_result(a, b))


@torch.library.custom_op("elementwise::add_out", mutates_args=("out",))
def add_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """out = a + b, a and b broadcast to out's shape."""
    ew.add(a, b, out=out)


@torch.library.custom_op("elementwise::mul", mutates_args=())
def mul(a: Tensor, b: Tensor) -> Tensor:
    """a * b, broadcast; bool: AND, integers wrap."""
    return ew.mul(a, b, out=_binary_result(a, b))


@torch.library.custom_op("elementwise::mul_out", mutates_args=("out",))
def mul_out(a: Tensor, b: Tensor, out: Tensor) -> None:
    """out = a * b, a and b broadcast to out's shape."""
    ew.mul(a, b, out=out)


@torch.library.custom_op("elementwise::relu", mutates_args=())
def relu(x: Tensor) -> Tensor:
    """max(x, 0); NaN kept, relu(-0.0) = +0.0."""
    return ew.relu(x, out=_like(x, x.shape, x.dtype))


@torch.library.custom_op("elementwise::relu_out", mutates_args=("out",))
def relu_out(x: Tensor, out: Tensor) -> None:
    """out = max(x, 0), x broadcast to out's shape."""
    ew.relu(x, out=out)


@torch.library.custom_op("elementwise::cast", mutates_args=())
def cast(x: Tensor, dtype: torch.dtype) -> Tensor:
    """x converted to ``dtype`` (any of the 169 pairs; docs/semantics.md §5)."""
    return ew.cast(x, dtype, out=_like(x, x.shape, dtype))


@torch.library.custom_op("elementwise::cast_out", mutates_args=("out",))
def cast_out(x: Tensor, out: Tensor) -> None:
    """out = x converted to out's dtype, x broadcast to out's shape."""
    ew.cast(x, out.dtype, out=out)


@torch.library.custom_op("elementwise::scale_add", mutates_args=())
def scale_add(alpha: Number, a: Tensor, b: Tensor) -> Tensor:
    """alpha * a + b, broadcast (floats: one fused multiply-add; integers: integral alpha)."""
    return ew.scale_add(alpha, a, b, out=_binary_result(a, b))


@torch.library.custom_op("elementwise::scale_add_out", mutates_args=("out",))
def scale_add_out(alpha: Number, a: Tensor, b: Tensor, out: Tensor) -> None:
    """out = alpha * a + b, a and b broadcast to out's shape."""
    ew.scale_add(alpha, a, b, out=out)


@add.register_fake
@mul.register_fake
def _binary_fake(a, b):
    return _binary_result(a, b)


@relu.register_fake
def _relu_fake(x):
    return _like(x, x.shape, x.dtype)


@cast.register_fake
def _cast_fake(x, dtype):
    return _like(x, x.shape, dtype)


@scale_add.register_fake
def _scale_add_fake(alpha, a, b):
    return _binary_result(a, b)


@add_out.register_fake
@mul_out.register_fake
@relu_out.register_fake
@cast_out.register_fake
@scale_add_out.register_fake
def _out_fake(*args):
    return None


# ---- autograd: PyTorch's own formulas (derivatives.yaml), so gradients match torch's ops ----
# A gradient of the broadcast shape is summed back to each input's shape (sum_to_size), as autograd
# does for torch's broadcasting ops.

def _add_setup(ctx, inputs, output):
    ctx.shapes = inputs[-2].shape, inputs[-1].shape


def _add_backward(ctx, grad):
    a_shape, b_shape = ctx.shapes
    return grad.sum_to_size(a_shape), grad.sum_to_size(b_shape)


def _mul_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _mul_backward(ctx, grad):
    a, b = ctx.saved_tensors
    return (grad.mul(b).sum_to_size(a.shape) if ctx.needs_input_grad[0] else None,
            grad.mul(a).sum_to_size(b.shape) if ctx.needs_input_grad[1] else None)


def _relu_setup(ctx, inputs, output):
    ctx.save_for_backward(output)


def _relu_backward(ctx, grad):
    result, = ctx.saved_tensors
    return torch.ops.aten.threshold_backward(grad, result, 0)


def _cast_setup(ctx, inputs, output):
    ctx.in_dtype = inputs[0].dtype


def _cast_backward(ctx, grad):
    # Called for a floating output only: integer and bool outputs carry no gradient.
    return grad.to(ctx.in_dtype), None


def _scale_add_setup(ctx, inputs, output):
    ctx.alpha = inputs[0]
    _add_setup(ctx, inputs, output)


def _scale_add_backward(ctx, grad):
    a_shape, b_shape = ctx.shapes
    return None, grad.mul(ctx.alpha).sum_to_size(a_shape), grad.sum_to_size(b_shape)


add.register_autograd(_add_backward, setup_context=_add_setup)
mul.register_autograd(_mul_backward, setup_context=_mul_setup)
relu.register_autograd(_relu_backward, setup_context=_relu_setup)
cast.register_autograd(_cast_backward, setup_context=_cast_setup)
scale_add.register_autograd(_scale_add_backward, setup_context=_scale_add_setup)


# ---- the list ops: entry i is the per-tensor call on the inputs' i-th tensors, in one launch ----

@torch.library.custom_op("elementwise::add_batched", mutates_args=())
def add_batched(as_: List[Tensor], bs: List[Tensor]) -> List[Tensor]:
    return ew.add_batched(as_, bs, outs=_likes(as_))


@torch.library.custom_op("elementwise::add_batched_out", mutates_args=("outs",))
def add_batched_out(as_: List[Tensor], bs: List[Tensor], outs: List[Tensor]) -> None:
    ew.add_batched(as_, bs, outs=outs)


@torch.library.custom_op("elementwise::mul_batched", mutates_args=())
def mul_batched(as_: List[Tensor], bs: List[Tensor]) -> List[Tensor]:
    return ew.mul_batched(as_, bs, outs=_likes(as_))


@torch.library.custom_op("elementwise::mul_batched_out", mutates_args=("outs",))
def mul_batched_out(as_: List[Tensor], bs: List[Tensor], outs: List[Tensor]) -> None:
    ew.mul_batched(as_, bs, outs=outs)


@torch.library.custom_op("elementwise::relu_batched", mutates_args=())
def relu_batched(xs: List[Tensor]) -> List[Tensor]:
    return ew.relu_batched(xs, outs=_likes(xs))


@torch.library.custom_op("elementwise::relu_batched_out", mutates_args=("outs",))
def relu_batched_out(xs: List[Tensor], outs: List[Tensor]) -> None:
    ew.relu_batched(xs, outs=outs)


@torch.library.custom_op("elementwise::cast_batched", mutates_args=())
def cast_batched(xs: List[Tensor], dtype: torch.dtype) -> List[Tensor]:
    return ew.cast_batched(xs, dtype, outs=_likes(xs, dtype))


@torch.library.custom_op("elementwise::cast_batched_out", mutates_args=("outs",))
def cast_batched_out(xs: List[Tensor], outs: List[Tensor]) -> None:
    # One dtype pair for the list: the outputs' (the call refuses a list that mixes them); an empty
    # list runs nothing.
    ew.cast_batched(xs, outs[0].dtype if outs else torch.float32, outs=outs)


@torch.library.custom_op("elementwise::scale_add_batched", mutates_args=())
def scale_add_batched(alpha: Number, as_: List[Tensor], bs: List[Tensor]) -> List[Tensor]:
    return ew.scale_add_batched(alpha, as_, bs, outs=_likes(as_))


@torch.library.custom_op("elementwise::scale_add_batched_out", mutates_args=("outs",))
def scale_add_batched_out(alpha: Number, as_: List[Tensor], bs: List[Tensor], outs: List[Tensor]) -> None:
    ew.scale_add_batched(alpha, as_, bs, outs=outs)


@add_batched.register_fake
@mul_batched.register_fake
def _binary_batched_fake(as_, bs):
    return _likes(as_)


relu_batched.register_fake(_likes)
cast_batched.register_fake(_likes)


@scale_add_batched.register_fake
def _scale_add_batched_fake(alpha, as_, bs):
    return _likes(as_)


# Autograd of the lists: entry by entry the per-tensor formulas above (a list broadcasts nothing).

def _no_setup(ctx, inputs, output):
    pass


def _add_batched_backward(ctx, grads):
    return list(grads), list(grads)


def _mul_batched_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[0], *inputs[1])


def _mul_batched_backward(ctx, grads):
    saved = ctx.saved_tensors
    as_, bs = saved[:len(grads)], saved[len(grads):]
    return [g.mul(b) for g, b in zip(grads, bs)], [g.mul(a) for g, a in zip(grads, as_)]


def _relu_batched_setup(ctx, inputs, output):
    ctx.save_for_backward(*output)


def _relu_batched_backward(ctx, grads):
    return [torch.ops.aten.threshold_backward(g, r, 0) for g, r in zip(grads, ctx.saved_tensors)]


def _cast_batched_setup(ctx, inputs, output):
    ctx.in_dtypes = [x.dtype for x in inputs[0]]


def _cast_batched_backward(ctx, grads):
    return [g.to(dtype) for g, dtype in zip(grads, ctx.in_dtypes)], None


def _scale_add_batched_setup(ctx, inputs, output):
    ctx.alpha = inputs[0]


def _scale_add_batched_backward(ctx, grads):
    return None, [g.mul(ctx.alpha) for g in grads], list(grads)


add_batched.register_autograd(_add_batched_backward, setup_context=_no_setup)
mul_batched.register_autograd(_mul_batched_backward, setup_context=_mul_batched_setup)
relu_batched.register_autograd(_relu_batched_backward, setup_context=_relu_batched_setup)
cast_batched.register_autograd(_cast_batched_backward, setup_context=_cast_batched_setup)
scale_add_batched.register_autograd(_scale_add_batched_backward, setup_context=_scale_add_batched_setup)


@add_batched_out.register_fake
@mul_batched_out.register_fake
@relu_batched_out.register_fake
@cast_batched_out.register_fake
@scale_add_batched_out.register_fake
def _batched_out_fake(*args):
    return None


# ---- scaled casts: functional forms, no autograd ----

@torch.library.custom_op("elementwise::quantize", mutates_args=())
def quantize(x: Tensor, dtype: torch.dtype, scale: Tensor) -> Tensor:
    """saturate(float(x) * scale) in ``dtype`` (float8_e4m3fn or float8_e5m2); scale a float32 device
    scalar (shape () or (1,))."""
    return ew.quantize(x, dtype, scale, out=_like(x, x.shape, dtype))


@torch.library.custom_op("elementwise::dequantize", mutates_args=())
def dequantize(q: Tensor, dtype: torch.dtype, scale_inv: Tensor) -> Tensor:
    """float(q) * scale_inv converted to ``dtype`` (f16, bf16, f32 or f64); q float8."""
    return ew.dequantize(q, dtype, scale_inv, out=_like(q, q.shape, dtype))


def _amax_result(x: Tensor) -> Tensor:
    # The direct call's out=None: a shape () float32 tensor on x's device.
    return torch.empty((), dtype=torch.float32, device=x.device)


@torch.library.custom_op("elementwise::amax", mutates_args=())
def amax(x: Tensor) -> Tensor:
    """max |float(x)| as a shape () float32 tensor (NaN if x holds one); x contiguous."""
    return ew.amax(x, out=_amax_result(x))


@quantize.register_fake
def _quantize_fake(x, dtype, scale):
    return _like(x, x.shape, dtype)


@dequantize.register_fake
def _dequantize_fake(q, dtype, scale_inv):
    return _like(q, q.shape, dtype)


amax.register_fake(_amax_result)


# ---- block-scaled casts: functional forms, no autograd ----

# format -> (the block, the scales' dtype by name: float8_e8m0fnu is PyTorch 2.7's, looked up when used)
_BLOCKS = {"mx": (32, "float8_e8m0fnu"), "nvfp4": (16, "float8_e4m3fn")}


def _rows(x: Tensor):
    # The product of the leading dimensions (symbolic sizes kept symbolic).
    rows = 1
    for extent in x.shape[:-1]:
        rows = rows * extent
    return rows


def _block_format(format: str):
    if format not in _BLOCKS:
        raise ValueError("format must be 'mx' or 'nvfp4', not %r" % (format,))
    block, scale_dtype = _BLOCKS[format]
    return block, getattr(torch, scale_dtype)


def _blocks_results(x: Tensor, dtype: torch.dtype, format: str, swizzled: bool):
    """What ew.quantize_blocks makes for out=None and scales=None: x's shape in ``dtype``'s elements (a
    float4_e2m1fn_x2 byte holds two) and ew.block_scales_shape's scales, C-contiguous on x's device.
    The scale shape is the library's arithmetic, written here again so that symbolic sizes stay symbolic
    (ew.block_scales_shape takes ints); the direct call checks it is the library's."""
    block, scale_dtype = _block_format(format)
    cols = x.shape[-1]
    scale_rows, scale_cols = _rows(x), cols // block
    if swizzled:  # 128 x 4 tiles of scales, padded
        scale_rows, scale_cols = (scale_rows + 127) // 128 * 128, (scale_cols + 3) // 4 * 4
    shape = (*x.shape[:-1], cols // 2) if dtype == getattr(torch, "float4_e2m1fn_x2", None) else tuple(x.shape)
    return (torch.empty(shape, dtype=dtype, device=x.device),
            torch.empty((scale_rows, scale_cols), dtype=scale_dtype, device=x.device))


@torch.library.custom_op("elementwise::quantize_blocks", mutates_args=())
def quantize_blocks(x: Tensor, dtype: torch.dtype, format: str = "mx", round_up: bool = False, swizzled: bool = False,
                    global_scale: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """(q, scales): x quantized in blocks along its last dimension, as ew.quantize_blocks (format "mx":
    dtype float8_e4m3fn, float8_e5m2 or float4_e2m1fn_x2, float8_e8m0fnu scales; "nvfp4":
    float4_e2m1fn_x2, float8_e4m3fn scales times global_scale)."""
    q, scales = _blocks_results(x, dtype, format, swizzled)
    return ew.quantize_blocks(x, dtype, format=format, round_up=round_up, swizzled=swizzled,
                              global_scale=global_scale, out=q, scales=scales)


@quantize_blocks.register_fake
def _quantize_blocks_fake(x, dtype, format="mx", round_up=False, swizzled=False, global_scale=None):
    return _blocks_results(x, dtype, format, swizzled)


def _dequantize_blocks_result(q: Tensor, dtype: torch.dtype, format: str) -> Tensor:
    # What ew.dequantize_blocks makes for out=None: q's shape in elements (NVFP4's uint8 q is float4).
    _block_format(format)
    packed = q.dtype == getattr(torch, "float4_e2m1fn_x2", None) or (format == "nvfp4" and q.dtype == torch.uint8)
    shape = (*q.shape[:-1], q.shape[-1] * 2) if packed else tuple(q.shape)
    return torch.empty(shape, dtype=dtype, device=q.device)


@torch.library.custom_op("elementwise::dequantize_blocks", mutates_args=())
def dequantize_blocks(q: Tensor, scales: Tensor, dtype: torch.dtype, format: str = "mx", swizzled: bool = False,
                      global_scale: Optional[Tensor] = None) -> Tensor:
    """float(q) * the block's scale (times global_scale, "nvfp4") in ``dtype`` (f16, bf16 or f32), as
    ew.dequantize_blocks; q float8 or float4_e2m1fn_x2 (uint8 for "nvfp4")."""
    return ew.dequantize_blocks(q, scales, dtype, format=format, swizzled=swizzled, global_scale=global_scale,
                                out=_dequantize_blocks_result(q, dtype, format))


@dequantize_blocks.register_fake
def _dequantize_blocks_fake(q, scales, dtype, format="mx", swizzled=False, global_scale=None):
    return _dequantize_blocks_result(q, dtype, format)


# ---- user kernels: an op per Kernel, on request ----

def kernel_op(kernel: "ew.Kernel", name: str) -> torch.library.CustomOpDef:
    """Register ``kernel`` (an :class:`elementwise.Kernel`) as the custom op ``elementwise::<name>``
    and return it: ``op(inputs, params)`` runs ``kernel(*inputs, params=params)`` into a new tensor
    of the inputs' broadcast shape and the kernel's out dtype, allocated as the direct call does. A
    Kernel is compiled code, no op argument, so torch.compile cannot trace ``kernel(...)`` itself;
    call the op instead. No autograd: the body's derivative is unknown (register one on the op
    with ``register_autograd`` if you know it). A kernel of one output only (its body returns): one of
    several outputs or a reduction (out_dtype a sequence, reduce=) is refused with a TypeError."""
    if kernel.reduce is not None or isinstance(kernel.out_dtype, tuple):
        raise TypeError("kernel_op: %r has several outputs; the op is made of a kernel of one output (its body "
                        "returns), so call this one directly" % (kernel,))
    out_dtype = _as_torch_dtype(kernel.out_dtype)

    def result(inputs):
        return _like(inputs[0], torch.broadcast_shapes(*[x.shape for x in inputs]), out_dtype)

    def run(inputs: List[Tensor], params: List[float]) -> Tensor:
        return kernel(*inputs, out=result(inputs), params=params)

    op = torch.library.custom_op("elementwise::" + name, run, mutates_args=())
    op.register_fake(lambda inputs, params: result(inputs))
    return op


# ---- torch.compile: the module's C functions, traced as the custom ops ----
# Each substitute takes its function's arguments but dtype= and handle= (torch checks the signatures
# only where the C function states one in __text_signature__, and these state none) and is used only
# while torch.compile traces: it maps the call onto the op, with out= the mutating op and the same out
# returned. The arguments are tensors there; dtypes, ops and alpha
# are constants of the graph; unary/binary (and their lists) name their op by ew.Op.

@torch.compiler.assume_constant_result
def _named_dtype(dtype) -> torch.dtype:
    # Run once while tracing, not traced: the package's own reading of a name.
    return _as_torch_dtype(dtype)


def _torch_dtype(dtype) -> torch.dtype:
    return dtype if isinstance(dtype, torch.dtype) else _named_dtype(dtype)


# ew.Op -> its member's name lower-cased (an IntEnum: a plain int finds it too). A dict built at
# import, because Dynamo traces a dict lookup but not the enum's __members__ property.
_OP_NAMES = {op: op.name.lower() for op in ew.Op}


def _traced_call(name, args, out, stream, head=(), tail=()):
    """``out`` None: the op ``name`` on head + args + tail, its result returned; else ``name``_out on
    head + args and out, and out returned. Lists are passed as lists (the schema's Tensor[])."""
    if stream is not None:
        raise TypeError("elementwise under torch.compile: stream= is not traced; queue the call with "
                        "`with torch.cuda.stream(s):` instead")
    args = tuple(list(arg) if isinstance(arg, (list, tuple)) else arg for arg in args)
    if out is None:
        return getattr(_OPS, name).default(*head, *args, *tail)
    out = list(out) if isinstance(out, (list, tuple)) else out
    getattr(_OPS, name + "_out").default(*head, *args, out)
    return out


def _named(op, names, what):
    name = _OP_NAMES.get(op)
    if name not in names:
        raise ValueError("elementwise.%s: %r is not one of its ops (%s)" % (what, op, ", ".join(names)))
    return name


_OPS = torch.ops.elementwise


@torch.compiler.substitute_in_graph(ew.add)
def _compiled_add(a, b, *, out=None, stream=None):
    return _traced_call("add", (a, b), out, stream)


@torch.compiler.substitute_in_graph(ew.mul)
def _compiled_mul(a, b, *, out=None, stream=None):
    return _traced_call("mul", (a, b), out, stream)


@torch.compiler.substitute_in_graph(ew.relu)
def _compiled_relu(x, *, out=None, stream=None):
    return _traced_call("relu", (x,), out, stream)


@torch.compiler.substitute_in_graph(ew.cast)
def _compiled_cast(x, dtype, *, out=None, stream=None):
    return _traced_call("cast", (x,), out, stream, tail=(_torch_dtype(dtype),))


@torch.compiler.substitute_in_graph(ew.scale_add)
def _compiled_scale_add(alpha, a, b, *, out=None, stream=None):
    return _traced_call("scale_add", (a, b), out, stream, head=(alpha,))


@torch.compiler.substitute_in_graph(ew.unary)
def _compiled_unary(op, x, *, out=None, stream=None):
    return _traced_call(_named(op, ("relu",), "unary"), (x,), out, stream)


@torch.compiler.substitute_in_graph(ew.binary)
def _compiled_binary(op, a, b, *, out=None, stream=None):
    return _traced_call(_named(op, ("add", "mul"), "binary"), (a, b), out, stream)


@torch.compiler.substitute_in_graph(ew.add_batched)
def _compiled_add_batched(as_, bs, *, outs=None, stream=None):
    return _traced_call("add_batched", (as_, bs), outs, stream)


@torch.compiler.substitute_in_graph(ew.mul_batched)
def _compiled_mul_batched(as_, bs, *, outs=None, stream=None):
    return _traced_call("mul_batched", (as_, bs), outs, stream)


@torch.compiler.substitute_in_graph(ew.relu_batched)
def _compiled_relu_batched(xs, *, outs=None, stream=None):
    return _traced_call("relu_batched", (xs,), outs, stream)


@torch.compiler.substitute_in_graph(ew.cast_batched)
def _compiled_cast_batched(xs, dtype, *, outs=None, stream=None):
    return _traced_call("cast_batched", (xs,), outs, stream, tail=(_torch_dtype(dtype),))


@torch.compiler.substitute_in_graph(ew.scale_add_batched)
def _compiled_scale_add_batched(alpha, as_, bs, *, outs=None, stream=None):
    return _traced_call("scale_add_batched", (as_, bs), outs, stream, head=(alpha,))


@torch.compiler.substitute_in_graph(ew.unary_batched)
def _compiled_unary_batched(op, xs, *, outs=None, stream=None):
    return _traced_call(_named(op, ("relu",), "unary_batched") + "_batched", (xs,), outs, stream)


@torch.compiler.substitute_in_graph(ew.binary_batched)
def _compiled_binary_batched(op, as_, bs, *, outs=None, stream=None):
    return _traced_call(_named(op, ("add", "mul"), "binary_batched") + "_batched", (as_, bs), outs, stream)
