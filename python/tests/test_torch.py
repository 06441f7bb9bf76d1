# SPDX-License-Identifier: Apache-2.0
"""elementwise.torch: the calls as torch.library custom ops, their fake implementations and autograd
formulas, and torch.compile of the module's own calls.

Without a GPU (PyTorch alone): the ops' schemas, their fake outputs on the meta device (shape,
dtype, strides) and the import hook. On a GPU: torch.library.opcheck of every op for every dtype
family, torch.compile(fullgraph=True) of chains of ew calls against the same calls made eagerly (bit
for bit, no graph break, the custom ops in the graph), gradients against PyTorch's own ops and
gradcheck in f64, and the out= forms. Each test is skipped, with its reason, without PyTorch or a
GPU; under ELEMENTWISE_REQUIRE_GPU=1 it fails instead.
"""

import os
import subprocess
import sys

import pytest

import elementwise as ew
from conftest import INSTALLED, PACKAGE_DIR, unavailable

# The dtypes by family, by torch's names; each op's dtypes are docs/semantics.md's.
FAMILIES = {
    "float": ("float32", "float64"),
    "float16": ("float16", "bfloat16"),
    "int": ("int8", "uint8", "int16", "int32", "int64"),
    "fp8": ("float8_e4m3fn", "float8_e5m2"),
    "bool": ("bool",),
}
ALL = [name for names in FAMILIES.values() for name in names]
NO_FP8 = [name for name in ALL if name not in FAMILIES["fp8"]]
OP_DTYPES = {"add": NO_FP8, "mul": NO_FP8, "relu": [name for name in NO_FP8 if name != "bool"],
             "scale_add": NO_FP8}
DIFFERENTIABLE = ("float32", "float64", "float16", "bfloat16")


def family(name):
    return next(key for key, names in FAMILIES.items() if name in names)


# ---- fixtures: PyTorch, the registered module, the GPU ----

@pytest.fixture(scope="module")
def torch():
    try:
        import torch
    except ImportError:
        unavailable("PyTorch is not installed")
    return torch


@pytest.fixture(scope="module")
def et(torch):
    import elementwise.torch as registered  # a failed registration fails here, loudly
    return registered


@pytest.fixture(scope="module")
def device(torch, et):
    if not torch.cuda.is_available():
        unavailable("PyTorch sees no CUDA device")
    return torch.device("cuda")


@pytest.fixture
def compiler(torch):
    """torch.compile with a fresh cache and graph-break counters; yields the counters to check."""
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    yield counters
    torch._dynamo.reset()


def values(torch, shape, name, device, seed=0):
    """Nonzero-heavy values of dtype ``name``: normal floats (x4, rounded into the dtype), integers
    across most of the range, bools of both values."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dtype = getattr(torch, name)
    if name == "bool":
        made = torch.randint(0, 2, shape, generator=generator).bool()
    elif family(name) == "int":
        info = torch.iinfo(dtype)
        made = torch.randint(max(info.min, -1000), min(info.max, 1000), shape, generator=generator).to(dtype)
    else:
        made = (torch.randn(shape, generator=generator) * 4).to(dtype)
    return made.to(device)


def bits(torch, tensor):
    """The tensor's raw bits as an integer tensor (NaN payloads and signed zeros compare exactly)."""
    if tensor.dtype.is_floating_point:
        return tensor.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()])
    return tensor


def assert_same_bits(torch, got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    assert torch.equal(bits(torch, got), bits(torch, want)), "%s: bits differ at %d of %d elements" % (
        what, int((bits(torch, got) != bits(torch, want)).sum()), got.numel())


def alpha_for(name):
    # Integer dtypes take an integral alpha, bool 0 or 1 (docs/semantics.md §4).
    return 1 if name == "bool" else 3 if family(name) == "int" else 0.75


# ---- without a GPU: schemas, fake outputs, the import hook ----

SCHEMAS = {
    "add": "elementwise::add(Tensor a, Tensor b) -> Tensor",
    "add_out": "elementwise::add_out(Tensor a, Tensor b, Tensor(a2!) out) -> ()",
    "mul": "elementwise::mul(Tensor a, Tensor b) -> Tensor",
    "mul_out": "elementwise::mul_out(Tensor a, Tensor b, Tensor(a2!) out) -> ()",
    "relu": "elementwise::relu(Tensor x) -> Tensor",
    "relu_out": "elementwise::relu_out(Tensor x, Tensor(a1!) out) -> ()",
    "cast": "elementwise::cast(Tensor x, ScalarType dtype) -> Tensor",
    "cast_out": "elementwise::cast_out(Tensor x, Tensor(a1!) out) -> ()",
    "scale_add": "elementwise::scale_add(Scalar alpha, Tensor a, Tensor b) -> Tensor",
    "scale_add_out": "elementwise::scale_add_out(Scalar alpha, Tensor a, Tensor b, Tensor(a3!) out) -> ()",
    "add_batched": "elementwise::add_batched(Tensor[] as_, Tensor[] bs) -> Tensor[]",
    "add_batched_out": "elementwise::add_batched_out(Tensor[] as_, Tensor[] bs, Tensor(a2!)[] outs) -> ()",
    "mul_batched": "elementwise::mul_batched(Tensor[] as_, Tensor[] bs) -> Tensor[]",
    "mul_batched_out": "elementwise::mul_batched_out(Tensor[] as_, Tensor[] bs, Tensor(a2!)[] outs) -> ()",
    "relu_batched": "elementwise::relu_batched(Tensor[] xs) -> Tensor[]",
    "relu_batched_out": "elementwise::relu_batched_out(Tensor[] xs, Tensor(a1!)[] outs) -> ()",
    "cast_batched": "elementwise::cast_batched(Tensor[] xs, ScalarType dtype) -> Tensor[]",
    "cast_batched_out": "elementwise::cast_batched_out(Tensor[] xs, Tensor(a1!)[] outs) -> ()",
    "scale_add_batched": "elementwise::scale_add_batched(Scalar alpha, Tensor[] as_, Tensor[] bs) -> Tensor[]",
    "scale_add_batched_out": "elementwise::scale_add_batched_out(Scalar alpha, Tensor[] as_, Tensor[] bs, "
                             "Tensor(a3!)[] outs) -> ()",
    "quantize": "elementwise::quantize(Tensor x, ScalarType dtype, Tensor scale) -> Tensor",
    "dequantize": "elementwise::dequantize(Tensor q, ScalarType dtype, Tensor scale_inv) -> Tensor",
    "amax": "elementwise::amax(Tensor x) -> Tensor",
    "quantize_blocks": 'elementwise::quantize_blocks(Tensor x, ScalarType dtype, str format="mx", bool round_up=False, '
                       'bool swizzled=False, Tensor? global_scale=None) -> (Tensor, Tensor)',
    "dequantize_blocks": 'elementwise::dequantize_blocks(Tensor q, Tensor scales, ScalarType dtype, str format="mx", '
                         'bool swizzled=False, Tensor? global_scale=None) -> Tensor',
}


def test_schemas(torch, et):
    assert sorted(SCHEMAS) == sorted(name for name in et.__all__ if name != "kernel_op")
    for name, schema in SCHEMAS.items():
        assert str(getattr(torch.ops.elementwise, name).default._schema) == schema
        assert getattr(et, name)._opoverload is getattr(torch.ops.elementwise, name).default


def test_fake_outputs_on_meta(torch, et):
    ops = torch.ops.elementwise
    meta = torch.device("meta")
    transposed = torch.empty(7, 5, device=meta).t()  # (5, 7), strides (1, 5)
    row = torch.empty(7, device=meta)
    # The output of the inputs' broadcast shape; like a (its strides) when it has a's shape.
    for result in (ops.add(transposed, row), ops.mul(transposed, row), ops.scale_add(2.0, transposed, row),
                   ops.relu(transposed), ops.cast(transposed, torch.float16)):
        assert result.device == meta and result.shape == (5, 7) and result.stride() == (1, 5)
    assert ops.cast(transposed, torch.float16).dtype == torch.float16
    assert ops.add(row, transposed).stride() == (7, 1)  # not a's shape: C-contiguous
    assert ops.add(torch.empty(3, 1, device=meta), row).shape == (3, 7)
    channels_last = torch.empty(2, 3, 4, 5, device=meta).to(memory_format=torch.channels_last)
    assert ops.relu(channels_last).is_contiguous(memory_format=torch.channels_last)
    with pytest.raises(RuntimeError):
        ops.add(torch.empty(4, device=meta), torch.empty(5, device=meta))
    lists = ops.cast_batched([transposed, row], torch.bfloat16)
    assert [(t.shape, t.stride(), t.dtype) for t in lists] == [((5, 7), (1, 5), torch.bfloat16),
                                                              ((7,), (1,), torch.bfloat16)]
    assert [t.shape for t in ops.add_batched([transposed, row], [transposed, row])] == [(5, 7), (7,)]
    assert ops.add_out(transposed, row, torch.empty(5, 7, device=meta)) is None
    scale = torch.empty((), device=meta)
    q = ops.quantize(transposed, torch.float8_e4m3fn, scale)
    assert (q.shape, q.stride(), q.dtype) == ((5, 7), (1, 5), torch.float8_e4m3fn)
    back = ops.dequantize(q, torch.bfloat16, scale)
    assert (back.shape, back.stride(), back.dtype) == ((5, 7), (1, 5), torch.bfloat16)
    amax = ops.amax(row)
    assert (amax.shape, amax.dtype, amax.device) == ((), torch.float32, meta)


def test_block_fakes_on_meta_are_the_direct_calls_shapes(torch, et):
    # q: x's shape in the dtype's elements (a float4_e2m1fn_x2 byte holds two); scales: block_scales_shape's,
    # whose arithmetic the fake repeats for symbolic sizes: checked against the library's here.
    ops, meta = torch.ops.elementwise, torch.device("meta")
    for shape in [(1, 32), (129, 96), (300, 4096), (2, 3, 64), (0, 64), (128, 128), (64,), (4, 0)]:
        x = torch.empty(shape, dtype=torch.bfloat16, device=meta)
        for format, dtype, scale_dtype in (("mx", torch.float8_e4m3fn, torch.float8_e8m0fnu),
                                           ("mx", torch.float4_e2m1fn_x2, torch.float8_e8m0fnu),
                                           ("nvfp4", torch.float4_e2m1fn_x2, torch.float8_e4m3fn)):
            packed = dtype == torch.float4_e2m1fn_x2
            for swizzled in (False, True):
                q, scales = ops.quantize_blocks(x, dtype, format, False, swizzled, None)
                assert q.shape == (*shape[:-1], shape[-1] // 2 if packed else shape[-1]) and q.dtype == dtype
                assert scales.shape == ew.block_scales_shape(shape, format, swizzled=swizzled), (shape, format, swizzled)
                assert scales.dtype == scale_dtype and q.is_contiguous() and scales.is_contiguous()
                back = ops.dequantize_blocks(q, scales, torch.float32, format, swizzled, None)
                assert back.shape == shape and back.dtype == torch.float32
    uint8 = torch.empty(4, 16, dtype=torch.uint8, device=meta)  # NVFP4's uint8 q is float4
    assert ops.dequantize_blocks(uint8, uint8, torch.float16, format="nvfp4").shape == (4, 32)
    with pytest.raises(ValueError, match="format must be 'mx' or 'nvfp4'"):
        ops.quantize_blocks(torch.empty(4, 32, device=meta), torch.float8_e4m3fn, "fp4")


def _python(code, tmp_path):
    # The package the tests import (PACKAGE_DIR holds its compiled module), from another directory:
    # `python -c` imports from its working directory first, and the source tree's package has no module.
    env = dict(os.environ)
    if not INSTALLED:
        env["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    # A registration that fails warns (it never breaks torch._dynamo's import): here that fails.
    assert "torch.compile support is not registered" not in run.stderr, run.stderr
    return run


def test_import_hook_registers_when_dynamo_loads(torch, tmp_path):
    # import elementwise in a process with torch: nothing of elementwise.torch yet (its cost waits);
    # torch._dynamo's import (torch.compile's first step) then registers it, with no warning.
    run = _python("import sys, torch\n"
                  "import elementwise\n"
                  "assert 'elementwise.torch' not in sys.modules, 'registered too early'\n"
                  "import torch._dynamo\n"
                  "assert 'elementwise.torch' in sys.modules, 'not registered'\n"
                  "assert torch.ops.elementwise.add.default is not None\n", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


def test_import_hook_registers_at_once_after_dynamo(torch, tmp_path):
    run = _python("import sys, torch, torch._dynamo\n"
                  "import elementwise\n"
                  "assert 'elementwise.torch' in sys.modules, 'not registered'\n", tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr


# ---- on the GPU: opcheck ----

def _opcheck_cases(torch, device):
    """(id, op, args) for every op, per dtype: broadcast inputs for the per-tensor ops, a list of two
    shapes for the list ops; floating inputs require grad, so the autograd formulas are checked too."""
    ops = torch.ops.elementwise
    cases = []

    def make(shape, name, seed):
        tensor = values(torch, shape, name, device, seed)
        return tensor.requires_grad_() if name in DIFFERENTIABLE else tensor

    for op, names in OP_DTYPES.items():
        for name in names:
            dtype = getattr(torch, name)
            a, b, x = make((5, 7), name, 1), make((7,), name, 2), make((5, 7), name, 3)
            out = torch.empty(5, 7, dtype=dtype, device=device)
            firsts = [make((5, 7), name, 4), make((33,), name, 5)]
            seconds = [make((5, 7), name, 6), make((33,), name, 7)]
            outs = [torch.empty_like(t, requires_grad=False) for t in firsts]
            head = (alpha_for(name),) if op == "scale_add" else ()
            inputs = (x,) if op == "relu" else (a, b)
            lists = (firsts,) if op == "relu" else (firsts, seconds)
            detached = tuple(t.detach() for t in inputs)
            cases += [
                ("%s-%s" % (op, name), getattr(ops, op), head + inputs),
                ("%s_out-%s" % (op, name), getattr(ops, op + "_out"), head + detached + (out,)),
                ("%s_batched-%s" % (op, name), getattr(ops, op + "_batched"), head + lists),
                ("%s_batched_out-%s" % (op, name), getattr(ops, op + "_batched_out"),
                 head + tuple([t.detach() for t in items] for items in lists) + (outs,)),
            ]
    # cast: every dtype to f32 and from f32 (fp8 and bool both ways), and to itself; the input
    # requires grad where the output can carry one back.
    for name in ALL:
        for source, target in sorted({(name, "float32"), ("float32", name), (name, name)}):
            made = make if target in DIFFERENTIABLE else lambda shape, dtype, seed: values(torch, shape, dtype, device, seed)
            x = made((5, 7), source, 8)
            xs = [made((5, 7), source, 9), made((33,), source, 10)]
            target_dtype = getattr(torch, target)
            tag = "%s-to-%s" % (source, target)
            cases += [
                ("cast-" + tag, ops.cast, (x, target_dtype)),
                ("cast_out-" + tag, ops.cast_out, (x.detach(), torch.empty(5, 7, dtype=target_dtype, device=device))),
                ("cast_batched-" + tag, ops.cast_batched, (xs, target_dtype)),
                ("cast_batched_out-" + tag, ops.cast_batched_out,
                 ([t.detach() for t in xs], [torch.empty(t.shape, dtype=target_dtype, device=device) for t in xs])),
            ]
    return cases


def test_opcheck_every_op_and_dtype(torch, device):
    cases = _opcheck_cases(torch, device)
    covered = {(case_id.split("-")[0], family(case_id.split("-")[1])) for case_id, _, _ in cases}
    for op in ("add", "mul", "scale_add", "cast"):
        for suffix in ("", "_out", "_batched", "_batched_out"):
            expected = FAMILIES if op == "cast" else [f for f in FAMILIES if f != "fp8"]
            assert {f for o, f in covered if o == op + suffix} == set(expected), op + suffix
    failures = []
    for case_id, op, args in cases:
        tensors = [t for arg in args for t in (arg if isinstance(arg, list) else [arg]) if isinstance(t, torch.Tensor)]
        fp8 = any(t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) for t in tensors)
        # opcheck's test_schema compares tensors with allclose, which PyTorch has no fp8 kernel for:
        # with fp8 operands the other three tests run, and the inputs' bits are checked unchanged here.
        only = {"test_utils": ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")}
        inputs = [t for arg in args[:-1] for t in (arg if isinstance(arg, list) else [arg])
                  if isinstance(t, torch.Tensor)] if "_out-" in case_id else tensors
        before = [bits(torch, t.detach()).clone() for t in inputs]
        try:
            result = torch.library.opcheck(op, args, **(only if fp8 else {}))
        except Exception as error:  # collect every failing case, then fail with all of them
            failures.append("%s: %s" % (case_id, str(error).splitlines()[0]))
            continue
        bad = {test: verdict for test, verdict in result.items() if verdict != "SUCCESS"}
        changed = [i for i, (t, was) in enumerate(zip(inputs, before)) if not torch.equal(bits(torch, t.detach()), was)]
        if bad or changed:
            failures.append("%s: %s%s" % (case_id, bad, " inputs %s changed" % changed if changed else ""))
    assert not failures, "%d of %d opcheck cases failed:\n%s" % (len(failures), len(cases), "\n".join(failures))


# ---- on the GPU: the ops give the direct calls' results and layouts ----

def test_ops_match_direct_calls(torch, device, et):
    ops = torch.ops.elementwise
    for name in ("float32", "float16", "int32"):
        dtype = getattr(torch, name)
        transposed = values(torch, (9, 5), name, device, 1).t()
        row = values(torch, (9,), name, device, 2)
        for got, want in ((ops.add(transposed, row), ew.add(transposed, row)),
                          (ops.add(row, transposed), ew.add(row, transposed)),
                          (ops.mul(transposed, row), ew.mul(transposed, row)),
                          (ops.relu(transposed), ew.relu(transposed)),
                          (ops.scale_add(alpha_for(name), transposed, row), ew.scale_add(alpha_for(name), transposed, row)),
                          (ops.cast(transposed, torch.float16), ew.cast(transposed, torch.float16))):
            assert got.stride() == want.stride(), (name, got.stride(), want.stride())
            assert_same_bits(torch, got, want, name)
        # out=: the op fills out and returns nothing; out holds the direct call's bits.
        out = torch.full((5, 9), 7, dtype=dtype, device=device)
        assert ops.add_out(transposed, row, out) is None
        assert_same_bits(torch, out, ew.add(transposed, row), "add_out " + name)
        outs = [torch.full((5, 9), 7, dtype=dtype, device=device)]
        assert ops.relu_batched_out([transposed.contiguous()], outs) is None
        assert_same_bits(torch, outs[0], ew.relu(transposed.contiguous()), "relu_batched_out " + name)
        listed = ops.scale_add_batched(alpha_for(name), [transposed.contiguous(), row], [transposed.contiguous(), row])
        for got, a in zip(listed, [transposed.contiguous(), row]):
            assert_same_bits(torch, got, ew.scale_add(alpha_for(name), a, a), "scale_add_batched " + name)


def test_scaled_cast_ops(torch, device, et):
    ops = torch.ops.elementwise
    fp8 = (torch.float8_e4m3fn, torch.float8_e5m2)
    # opcheck's test_schema compares with allclose, which has no fp8 kernel: the other tests run.
    only = {"test_utils": ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")}
    scale = torch.full((), 0.5, device=device)
    for name in ("float32", "bfloat16", "float16", "float64"):
        dtype = getattr(torch, name)
        x = values(torch, (9, 5), name, device, 1).t()  # a transposed input: the strided call
        for target in fp8:
            q = ops.quantize(x, target, scale)
            assert_same_bits(torch, q, ew.quantize(x, target, scale), "quantize %s -> %s" % (name, target))
            assert q.stride() == x.stride()
            result = torch.library.opcheck(ops.quantize, (x, target, scale), **only)
            assert all(verdict == "SUCCESS" for verdict in result.values()), result
            back = ops.dequantize(q, dtype, scale)
            assert_same_bits(torch, back, ew.dequantize(q, dtype, scale), "dequantize %s -> %s" % (target, name))
            result = torch.library.opcheck(ops.dequantize, (q, dtype, scale), **only)
            assert all(verdict == "SUCCESS" for verdict in result.values()), result
        contiguous = x.contiguous()
        assert_same_bits(torch, ops.amax(contiguous).reshape(1), ew.amax(contiguous).reshape(1), "amax " + name)
        result = torch.library.opcheck(ops.amax, (contiguous,))
        assert all(verdict == "SUCCESS" for verdict in result.values()), result


def test_block_cast_ops(torch, device, et):
    ops = torch.ops.elementwise
    # opcheck's test_schema compares with allclose, which has no fp8 or fp4 kernel: the other tests run.
    only = {"test_utils": ("test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")}
    g = torch.full((), 0.25, device=device)
    cases = [(torch.float8_e4m3fn, "mx", False, False, None), (torch.float8_e5m2, "mx", True, True, None),
             (torch.float4_e2m1fn_x2, "mx", True, False, None), (torch.float4_e2m1fn_x2, "nvfp4", False, True, g),
             (torch.float4_e2m1fn_x2, "nvfp4", False, False, None)]
    for name in ("float32", "bfloat16", "float16"):
        x = values(torch, (3, 5, 64), name, device, 1)
        for dtype, format, round_up, swizzled, global_scale in cases:
            what = "%s %s from %s%s" % (format, dtype, name, " swizzled" if swizzled else "")
            q, scales = ops.quantize_blocks(x, dtype, format, round_up, swizzled, global_scale)
            want_q, want_scales = ew.quantize_blocks(x, dtype, format=format, round_up=round_up, swizzled=swizzled,
                                                     global_scale=global_scale)
            for got, want in ((q, want_q), (scales, want_scales)):
                assert (got.shape, got.dtype) == (want.shape, want.dtype), what
                assert torch.equal(got.view(torch.uint8), want.view(torch.uint8)), what
            result = torch.library.opcheck(ops.quantize_blocks, (x, dtype, format, round_up, swizzled, global_scale),
                                           **only)
            assert all(verdict == "SUCCESS" for verdict in result.values()), (what, result)
            back = ops.dequantize_blocks(q, scales, x.dtype, format, swizzled, global_scale)
            assert_same_bits(torch, back, ew.dequantize_blocks(q, scales, x.dtype, format=format, swizzled=swizzled,
                                                               global_scale=global_scale), "dequantize " + what)
            result = torch.library.opcheck(ops.dequantize_blocks, (q, scales, x.dtype, format, swizzled, global_scale),
                                           **only)
            assert all(verdict == "SUCCESS" for verdict in result.values()), (what, result)


# ---- on the GPU: torch.compile of the module's calls ----

def _chain(a, b, bias, o):
    x = ew.add(a, bias)                 # broadcast (N, C) + (C,)
    x = ew.relu(x)
    x = ew.scale_add(0.5, x, b)
    ew.mul(x, b, out=o)                 # the out= form
    y = ew.binary(ew.Op.ADD, o, a)
    return ew.cast(y, "f16"), ew.cast(y, ew.DType.BF16), o


def _chain_inputs(torch, device, name):
    a = values(torch, (64, 33), name, device, 1)
    b = values(torch, (33, 64), name, device, 2).t()  # a transposed operand
    bias = values(torch, (33,), name, device, 3)
    return a, b, bias


def _graph_ops(torch, fn, *args):
    """The ops in the graphs torch._dynamo makes of fn, and its graph breaks."""
    explained = torch._dynamo.explain(fn)(*args)
    return {op for graph_ops in explained.ops_per_graph for op in graph_ops}, explained.graph_break_count


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_compile_chain_same_bits_no_graph_break(torch, device, et, compiler, name):
    a, b, bias = _chain_inputs(torch, device, name)
    eager_out = torch.empty(64, 33, dtype=a.dtype, device=device)
    want = _chain(a, b, bias, eager_out)
    compiled = torch.compile(_chain, fullgraph=True)
    out = torch.full((64, 33), 3, dtype=a.dtype, device=device)
    got = compiled(a, b, bias, out)
    for index, (g, w) in enumerate(zip(got, want)):
        assert_same_bits(torch, g, w, "%s output %d" % (name, index))
    assert got[2] is out, "the out= call under torch.compile must return out itself"
    assert_same_bits(torch, out, eager_out, name + " out")
    assert not compiler["graph_break"], dict(compiler["graph_break"])
    ops, breaks = _graph_ops(torch, _chain, a, b, bias, out)
    assert breaks == 0
    elementwise_ops = torch.ops.elementwise
    for op in (elementwise_ops.add, elementwise_ops.relu, elementwise_ops.scale_add, elementwise_ops.mul_out,
               elementwise_ops.cast):
        assert op.default in ops, "%s not in the graph: %s" % (op, ops)


def _in_place(x, o):
    ew.relu(x, out=x)                   # exactly in place
    ew.add(x, x, out=o[:, :40])         # out a view of an input
    return ew.mul(x, o[:, 40:])


def test_compile_in_place_and_view_outs(torch, device, et, compiler):
    x = values(torch, (30, 40), "float32", device, 1)
    o = values(torch, (30, 80), "float32", device, 2)
    x2, o2 = x.clone(), o.clone()
    want = _in_place(x, o)
    got = torch.compile(_in_place, fullgraph=True)(x2, o2)
    assert_same_bits(torch, got, want, "result")
    assert_same_bits(torch, x2, x, "x written in place")
    assert_same_bits(torch, o2, o, "o written through its view")
    assert not compiler["graph_break"], dict(compiler["graph_break"])


def _lists(as_, bs, outs):
    ys = ew.add_batched(as_, bs)
    ys = ew.relu_batched(ys)
    ys = ew.scale_add_batched(2.0, ys, bs)
    ew.mul_batched(ys, bs, outs=outs)
    return ew.cast_batched(outs, "f16"), ew.binary_batched(ew.Op.MUL, ys, bs), ew.unary_batched(ew.Op.RELU, ys)


def test_compile_lists_same_bits(torch, device, et, compiler):
    as_ = [values(torch, shape, "float32", device, seed) for seed, shape in enumerate([(7, 9), (1000,), (3,)])]
    bs = [values(torch, a.shape, "float32", device, 10 + seed) for seed, a in enumerate(as_)]
    eager_outs = [torch.empty_like(a) for a in as_]
    want = _lists(as_, bs, eager_outs)
    outs = [torch.full_like(a, 5) for a in as_]
    got = torch.compile(_lists, fullgraph=True)(as_, bs, outs)
    for group, (gs, ws) in enumerate(zip(got, want)):
        for index, (g, w) in enumerate(zip(gs, ws)):
            assert_same_bits(torch, g, w, "list %d entry %d" % (group, index))
    for g, w in zip(outs, eager_outs):
        assert_same_bits(torch, g, w, "outs")
    assert not compiler["graph_break"], dict(compiler["graph_break"])
    ops, breaks = _graph_ops(torch, _lists, as_, bs, outs)
    assert breaks == 0
    for op in ("add_batched", "relu_batched", "scale_add_batched", "mul_batched_out", "cast_batched",
               "mul_batched"):
        assert getattr(torch.ops.elementwise, op).default in ops, op


def test_compile_dynamic_shapes(torch, device, et, compiler):
    def f(a, b):
        return ew.relu(ew.add(a, b))
    compiled = torch.compile(f, fullgraph=True, dynamic=True)
    for rows in (5, 17, 1030):
        a = values(torch, (rows, 40), "float16", device, rows)
        b = values(torch, (40,), "float16", device, rows + 1)
        assert_same_bits(torch, compiled(a, b), f(a, b), "rows %d" % rows)
    assert not compiler["graph_break"], dict(compiler["graph_break"])


def test_compile_integer_and_bool(torch, device, et, compiler):
    def f(a, b, m, n):
        return ew.scale_add(3, ew.mul(a, b), b), ew.add(m, n), ew.cast(m, torch.int32)
    a, b = values(torch, (50, 3), "int32", device, 1), values(torch, (3,), "int32", device, 2)
    m, n = values(torch, (50, 3), "bool", device, 3), values(torch, (50, 3), "bool", device, 4)
    for g, w in zip(torch.compile(f, fullgraph=True)(a, b, m, n), f(a, b, m, n)):
        assert_same_bits(torch, g, w, "integer chain")


def test_kernel_op(torch, device, et, compiler):
    kernel = ew.Kernel("return ew::cast<__half>(ew::relu(ew::scale_add(p0, in0, in1)));",
                       out_dtype="f16", in_dtypes=("f32", "f32"), n_params=1)
    op = et.kernel_op(kernel, "test_scale_add_relu_f16")
    a = values(torch, (33, 64), "float32", device, 1).t()
    b = values(torch, (33,), "float32", device, 2)
    want = kernel(a, b, params=(1.5,))
    got = op([a, b], [1.5])
    assert got.stride() == want.stride()
    assert_same_bits(torch, got, want, "kernel op")
    compiled = torch.compile(lambda x, y: ew.relu(op([x, y], [1.5])), fullgraph=True)
    assert_same_bits(torch, compiled(a, b), ew.relu(want), "compiled kernel op")
    assert not compiler["graph_break"], dict(compiler["graph_break"])
    result = torch.library.opcheck(op, ([a, b], [1.5]))
    assert all(verdict == "SUCCESS" for verdict in result.values()), result


def test_kernel_op_refuses_a_kernel_of_several_outputs(torch, et):
    # No GPU needed: kernels that were never compiled, refused before anything is registered.
    for out_dtype, reduce in ((("f32", "f16"), None), ("f32", "abs_max"), (["f32"], None)):
        kernel = ew.Kernel._from_raw(None, out_dtype, ("f32",), reduce=reduce)
        with pytest.raises(TypeError, match="several outputs"):
            et.kernel_op(kernel, "test_several_outputs")


# ---- on the GPU: autograd ----

def _grads(torch, fn, inputs, upstream):
    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    result = fn(*leaves)
    return result, torch.autograd.grad(result, leaves, upstream)


@pytest.mark.parametrize("name", ["float32", "float16", "bfloat16", "float64"])
def test_gradients_match_torch(torch, device, et, name):
    a = values(torch, (6, 40), name, device, 1)
    b = values(torch, (40,), name, device, 2)
    upstream = values(torch, (6, 40), name, device, 3)
    pairs = [
        ("add", et.add, lambda x, y: x + y, (a, b)),
        ("mul", et.mul, lambda x, y: x * y, (a, b)),
        ("scale_add", lambda x, y: et.scale_add(0.75, x, y), lambda x, y: torch.add(y, x, alpha=0.75), (a, b)),
        ("relu", et.relu, torch.relu, (a,)),
    ]
    for op, ours, theirs, inputs in pairs:
        _, got = _grads(torch, ours, inputs, upstream)
        _, want = _grads(torch, theirs, inputs, upstream)
        for index, (g, w) in enumerate(zip(got, want)):
            assert_same_bits(torch, g, w, "%s %s gradient %d" % (op, name, index))
    for target in ("float32", "float16", "bfloat16", "float64", "float8_e4m3fn"):
        dtype = getattr(torch, target)
        up = values(torch, (6, 40), target, device, 4)
        _, got = _grads(torch, lambda x: et.cast(x, dtype), (a,), up)
        _, want = _grads(torch, lambda x: x.to(dtype), (a,), up)
        assert_same_bits(torch, got[0], want[0], "cast %s -> %s gradient" % (name, target))
    integer = et.cast(a.detach().clone().requires_grad_(), torch.int32)
    assert not integer.requires_grad, "a cast to an integer dtype carries no gradient"


def test_gradcheck_float64(torch, device, et):
    def make(shape, seed):
        return values(torch, shape, "float64", device, seed).requires_grad_()
    a, b = make((4, 6), 1), make((6,), 2)
    # relu away from its kink at 0, where finite differences are meaningless.
    x = make((4, 6), 3).detach()
    x = (x + torch.where(x >= 0, 0.5, -0.5)).requires_grad_()
    checks = [
        ("add", et.add, (a, b)), ("mul", et.mul, (a, b)), ("relu", et.relu, (x,)),
        ("scale_add", lambda p, q: et.scale_add(-1.25, p, q), (a, b)),
        ("cast", lambda p: et.cast(p, torch.float64), (a,)),
        ("add_batched", lambda p, q: et.add_batched([p, q], [p, q]), (a, b)),
        ("mul_batched", lambda p, q: et.mul_batched([p, q], [p, q]), (a, b)),
        ("scale_add_batched", lambda p: et.scale_add_batched(3.0, [p], [p]), (a,)),
        ("relu_batched", lambda p: et.relu_batched([p]), (x,)),
        ("cast_batched", lambda p: et.cast_batched([p], torch.float64), (a,)),
    ]
    for op, fn, inputs in checks:
        assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7), op
        assert torch.autograd.gradgradcheck(fn, inputs, eps=1e-6, atol=1e-7), op


def test_compile_autograd(torch, device, et, compiler):
    # The forward is the custom ops: eager's bits. The backward is PyTorch's own formulas, which
    # inductor fuses (one rounding fewer here and there): close to eager's, not bit for bit.
    def f(a, b):
        return ew.cast(ew.scale_add(1.5, ew.relu(ew.mul(a, b)), b), torch.float64)
    a = values(torch, (16, 24), "float32", device, 1)
    b = values(torch, (24,), "float32", device, 2)
    upstream = values(torch, (16, 24), "float64", device, 3)

    def eager(x, y):
        return et.cast(et.scale_add(1.5, et.relu(et.mul(x, y)), y), torch.float64)
    want_out, want = _grads(torch, eager, (a, b), upstream)
    got_out, got = _grads(torch, torch.compile(f, fullgraph=True), (a, b), upstream)
    assert_same_bits(torch, got_out.detach(), want_out.detach(), "forward")
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert not compiler["graph_break"], dict(compiler["graph_break"])
