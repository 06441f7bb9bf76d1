# SPDX-License-Identifier: Apache-2.0
"""The block-scaled casts on a GPU, against their oracle: torchao 0.18's eager reference functions, which
docs/semantics.md §11 defines them by, operation for operation. Bit for bit: every element byte and every
scale byte (the padding of swizzled scales included: torchao's to_blocked pads with zeros), and every
element of a dequantized result.

- MX (ew.quantize_blocks(x, dtype, round_up=, swizzled=)): torchao.prototype.mx_formats.mx_tensor.to_mx
  with ScaleCalculationMode.FLOOR or RCEIL, for float8_e4m3fn, float8_e5m2 and float4_e2m1fn_x2 from
  bf16 and f32 (f16 through its exact f32 values, which torchao's functions take);
  ew.dequantize_blocks against mx_tensor.to_dtype (row-major scales; swizzled ones through to_blocked).
- NVFP4 (format="nvfp4", global_scale=): nvfp4_tensor.nvfp4_quantize(x, 16, per_tensor_scale), and
  NVFP4Tensor.dequantize's arithmetic (float(q) * (per_tensor_scale * float(scale)), then the dtype).

Inputs: normal samples scaled by a random power of two every 16 elements, and leading blocks of special
cases (zeros, -0, NaN, -NaN, infinities, subnormals, exact max * 2^k and the e2m1 ties below it, values
past max * 2^k, near f32's limits); dequantize takes every code and every scale byte at random.

torchao is imported with TORCHAO_FORCE_SKIP_LOADING_SO_FILES=1 (its C++ kernels are not the reference
and are built for one PyTorch). Without torchao the tests skip, saying why; where scripts/ci/python.sh or
scripts/gpu/python-wheel.sh installed .deps/python's torchao wheel (ELEMENTWISE_REQUIRE_TORCHAO=1) a
failing import fails them instead. Without a GPU or PyTorch they skip as test_gpu.py's do.
"""

import math
import os
import types
import warnings
import zlib

import pytest

import elementwise as ew
from conftest import unavailable

D = ew.DType
TORCH_NAMES = {D.F8E4M3: "float8_e4m3fn", D.F8E5M2: "float8_e5m2", D.F4E2M1: "float4_e2m1fn_x2"}
ELEMENT_MAX = {D.F8E4M3: 448.0, D.F8E5M2: 57344.0, D.F4E2M1: 6.0}
MX_ELEMENTS = (D.F8E4M3, D.F8E5M2, D.F4E2M1)
SHAPES = [(1, 32), (129, 96), (300, 4096), (2, 3, 64)]
SOURCES = ("bfloat16", "float32", "float16")
TARGETS = ("bfloat16", "float32", "float16")


def names(value):
    return value.name.lower() if isinstance(value, D) else "x".join(map(str, value)) if isinstance(value, tuple) \
        else str(value)


# ---- fixtures: the GPU, PyTorch, torchao ----

@pytest.fixture(scope="module")
def torch(torch):
    """conftest's torch, with the float4 dtype the NVFP4 and MXFP4 checks need."""
    if not hasattr(torch, "float4_e2m1fn_x2"):
        unavailable("PyTorch %s has no float4_e2m1fn_x2 (2.8 and later have)" % torch.__version__)
    return torch


@pytest.fixture(scope="module")
def tao(torch):
    """torchao's reference modules, or a visible skip saying why they cannot be had."""
    os.environ.setdefault("TORCHAO_FORCE_SKIP_LOADING_SO_FILES", "1")
    try:
        import torchao
        from torchao.prototype.mx_formats import kernels, mx_tensor, nvfp4_tensor, utils
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
    except Exception as error:  # ImportError, or a torch too old for its module-level code
        reason = ("torchao cannot be imported (%s: %s): the block casts' oracle is torchao 0.18's reference "
                  "(scripts/ci/python.sh installs .deps/python/torchao-0.18.0-*.whl)" % (type(error).__name__, error))
        if os.environ.get("ELEMENTWISE_REQUIRE_TORCHAO") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    if not torchao.__version__.startswith("0.18."):
        reason = "torchao %s is not 0.18, whose arithmetic docs/semantics.md §11 names" % torchao.__version__
        if os.environ.get("ELEMENTWISE_REQUIRE_TORCHAO") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return types.SimpleNamespace(mx=mx_tensor, nv=nvfp4_tensor, kernels=kernels, utils=utils,
                                 modes=ScaleCalculationMode)


# ---- inputs ----

def special_blocks(torch, block, element_max, generator):
    """Blocks of `block` f32 values, one special case each."""
    def normals(scale=1.0):
        return (torch.randn(block, generator=generator, device="cuda") * scale).tolist()

    k = int(torch.randint(-20, 20, (1,), generator=generator, device="cuda"))
    top = element_max * 2.0 ** k
    ties = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -2.5, -5.0, 0.5, 3.0]  # e2m1's halfway points
    nan, inf = float("nan"), float("inf")
    cases = [
        [0.0] * block,
        [-0.0] * block,
        normals()[:3] + [nan] + normals()[4:],
        normals()[:5] + [inf] + normals()[6:],
        normals()[:7] + [-inf] + normals()[8:],
        [inf, -inf, nan] + normals()[3:],
        [v * 2.0 ** -140 for v in normals()],                    # f32 subnormals (bf16's too)
        [2.0 ** -126] + [v * 2.0 ** -133 for v in normals()[1:]],  # the smallest normal over subnormals
        [top, -top] + [v * top / 4 for v in normals()[2:]],       # max * 2^k exactly: no element saturates
        [6.0 * 2.0 ** k] + [t * 2.0 ** k for t in ties] + [0.0] * (block - 1 - len(ties)),  # ties after scaling
        [top * (1 + 2.0 ** -7), -top / 3] + normals(top / 8)[2:],  # just past max * 2^k
        [top * 1.14] + normals(top / 2)[1:],                       # past max * 2^k: the OCP floor saturates
        [3.0e38, -1.0e38] + normals(1e37)[2:],                    # near f32's largest
        [2.0 ** -149] * block,                                    # the smallest subnormal
        [v * 2.0 ** -120 for v in normals()],
        [-nan] + normals()[1:],                                   # a NaN with its sign bit set (below)
    ]
    made = torch.tensor(cases, dtype=torch.float32, device="cuda")
    bits = made.view(torch.int32)
    bits[-1, 0] = -4194304  # 0xFFC00000: -NaN (Python's -nan may lose its sign on the way)
    return made


def block_input(torch, shape, dtype, seed, block, element_max):
    """Random normals scaled by 2^k, k random every 16 elements, then the special blocks in the leading
    blocks (at most half of them); `dtype` a torch dtype, the values rounded to it."""
    generator = torch.Generator(device="cuda").manual_seed(seed)
    n = math.prod(shape)
    x = torch.randn(n, generator=generator, device="cuda")
    low, high = (-14, 12) if dtype == torch.float16 else (-30, 30)  # f16: mostly finite and normal
    k = torch.randint(low, high, (n // 16,), generator=generator, device="cuda")
    x *= torch.exp2(k.float()).repeat_interleave(16)
    blocks = x.view(-1, block)
    specials = special_blocks(torch, block, element_max, generator)
    count = min(specials.shape[0], blocks.shape[0] // 2)
    blocks[:count] = specials[:count]
    return x.view(shape).to(dtype)


def random_bytes(torch, shape, seed):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda", generator=generator)


def seed_of(*parts):
    return zlib.crc32(repr(parts).encode())  # the same in every process (str hashes are not)


# ---- comparisons ----

def as_bytes(torch, tensor):
    return tensor.contiguous().view(torch.uint8).flatten()


def assert_same_bytes(torch, got, want, what, context=None):
    """Every byte of got is want's; context(i) describes byte i's inputs."""
    got, want = as_bytes(torch, got), as_bytes(torch, want)
    assert got.numel() == want.numel(), "%s: %d bytes, want %d" % (what, got.numel(), want.numel())
    differ = (got != want).nonzero().flatten()
    if differ.numel():
        shown = ["byte %d: got 0x%02x, want 0x%02x%s" % (i, int(got[i]), int(want[i]), context(i) if context else "")
                 for i in differ[:8].tolist()]
        pytest.fail("%s: %d of %d bytes differ\n  %s" % (what, differ.numel(), got.numel(), "\n  ".join(shown)))


def assert_same_values(torch, got, want, what, inputs=None):
    """The same bits, element for element (NaN payloads included), of two float tensors."""
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    integer = {2: torch.int16, 4: torch.int32}[got.element_size()]
    a, b = got.contiguous().view(integer).flatten(), want.contiguous().view(integer).flatten()
    differ = (a != b).nonzero().flatten()
    if differ.numel():
        mask = (1 << (8 * got.element_size())) - 1
        shown = ["[%d]%s: got 0x%x (%r), want 0x%x (%r)" % (i, inputs(i) if inputs else "", int(a[i]) & mask,
                                                           float(got.flatten()[i]), int(b[i]) & mask,
                                                           float(want.flatten()[i]))
                 for i in differ[:8].tolist()]
        pytest.fail("%s: %d of %d elements differ\n  %s" % (what, differ.numel(), a.numel(), "\n  ".join(shown)))


def element_context(torch, x, block, packed):
    """Byte i of row-major elements: its inputs and its block's amax."""
    flat = x.float().flatten()

    def describe(i):
        first = 2 * i if packed else i
        values = flat[first:first + (2 if packed else 1)].tolist()
        start = first // block * block
        return " (x = %s, block %d amax %r)" % (values, first // block, float(flat[start:start + block].abs().max()))
    return describe


def scale_context(torch, x, block):
    flat = x.float().flatten()
    return lambda i: " (block %d: amax %r)" % (i, float(flat[i * block:(i + 1) * block].abs().max()))


def reference_input(torch, x):
    """What torchao takes: bf16 and f32 as they are, f16 as its exact f32 values (v = float(x) either way)."""
    return x.float() if x.dtype == torch.float16 else x


def rows_of(shape):
    return math.prod(shape[:-1])


# ---- MX ----

@pytest.mark.parametrize("swizzled", [False, True], ids=["rowmajor", "swizzled"])
@pytest.mark.parametrize("round_up", [False, True], ids=["floor", "rceil"])
@pytest.mark.parametrize("shape", SHAPES, ids=names)
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("element", MX_ELEMENTS, ids=names)
def test_mx_quantize_matches_torchao(torch, tao, element, source, shape, round_up, swizzled):
    dtype = getattr(torch, TORCH_NAMES[element])
    x = block_input(torch, shape, getattr(torch, source), seed_of("mx", element, source, shape), 32,
                    ELEMENT_MAX[element])
    mode = tao.modes.RCEIL if round_up else tao.modes.FLOOR
    reference = reference_input(torch, x)
    # torchao's swizzle of more than two dimensions needs 128-row multiples: the rows x cols view, whose
    # swizzled scales are the same bytes (the library's rows are the leading dimensions' product).
    if swizzled:
        reference = reference.reshape(rows_of(shape), shape[-1])
    want_scales, want_q = tao.mx.to_mx(reference, dtype, 32, scaling_mode=mode, is_swizzled_scales=swizzled)
    what = "MX %s from %s %s, %s%s" % (names(element), source, shape, mode.name, " swizzled" if swizzled else "")
    packed = element == D.F4E2M1

    q, scales = ew.quantize_blocks(x, dtype, round_up=round_up, swizzled=swizzled)
    assert q.dtype == dtype and q.shape == (*shape[:-1], shape[-1] // 2 if packed else shape[-1]) and q.is_contiguous()
    assert scales.dtype == torch.float8_e8m0fnu and scales.shape == ew.block_scales_shape(shape, swizzled=swizzled)
    assert_same_bytes(torch, q, want_q, what + ": elements", element_context(torch, x, 32, packed))
    assert_same_bytes(torch, scales, want_scales, what + ": scales",
                      None if swizzled else scale_context(torch, x, 32))
    # Into outputs given, poisoned first: every byte written (the scales' padding as zeros).
    out = torch.full(q.shape, 0x5A, dtype=torch.uint8, device="cuda").view(dtype)
    given = torch.full(scales.shape, 0x5A, dtype=torch.uint8, device="cuda").view(torch.float8_e8m0fnu)
    made = ew.quantize_blocks(x, dtype, round_up=round_up, swizzled=swizzled, out=out, scales=given)
    assert made[0] is out and made[1] is given
    assert_same_bytes(torch, out, want_q, what + ": elements into out=")
    assert_same_bytes(torch, given, want_scales, what + ": scales into scales=")


def mx_dequantize_inputs(torch, element, shape, seed):
    """Every code and every scale byte at random (0, 127, 254 and 255 among them), row-major scales."""
    packed = element == D.F4E2M1
    q = random_bytes(torch, (*shape[:-1], shape[-1] // 2 if packed else shape[-1]), seed)
    scales = random_bytes(torch, (rows_of(shape), shape[-1] // 32), seed + 1).flatten()
    scales[:4] = torch.tensor([0, 127, 254, 255], dtype=torch.uint8, device="cuda")[:scales.numel()]
    return q, scales.view(rows_of(shape), shape[-1] // 32)


def mx_f32_scale(torch, scales):
    """S = 2^(s - 127) in f32 (s = 0: 2^-127, a subnormal), NaN for s = 255: §11.4."""
    s = scales.view(torch.uint8).to(torch.int32)
    bits = torch.where(s == 0, torch.full_like(s, 0x00400000), s << 23)
    return torch.where(s == 255, torch.full_like(s, 0x7FC00000), bits).view(torch.float32)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("swizzled", [False, True], ids=["rowmajor", "swizzled"])
@pytest.mark.parametrize("shape", SHAPES, ids=names)
@pytest.mark.parametrize("element", MX_ELEMENTS, ids=names)
def test_mx_dequantize_matches_torchao(torch, tao, element, shape, swizzled, target):
    dtype, target_dtype = getattr(torch, TORCH_NAMES[element]), getattr(torch, target)
    packed = element == D.F4E2M1
    q_bytes, scale_bytes = mx_dequantize_inputs(torch, element, shape, seed_of("mxd", element, shape))
    e8m0 = scale_bytes.view(torch.float8_e8m0fnu)
    if target == "float16":
        # torchao's to_dtype multiplies in the target dtype with the scale converted to it first, which
        # overflows or flushes f16 scales past 2^15 or below 2^-24; §11.4 keeps the f32 product:
        # convert(float(q) * S). Its f32 arithmetic, from torchao's own decoding of the codes.
        values = (tao.kernels.f4_unpacked_to_f32(tao.kernels.unpack_uint4(q_bytes)) if packed
                  else q_bytes.view(dtype).float())
        want = (values.reshape(-1, 32) * mx_f32_scale(torch, e8m0).reshape(-1, 1)).reshape(shape).to(target_dtype)
    else:
        want = tao.mx.to_dtype(q_bytes if packed else q_bytes.view(dtype), e8m0, dtype, 32, target_dtype)
    given = e8m0
    if swizzled:
        given = tao.utils.to_blocked(scale_bytes).view(torch.float8_e8m0fnu)  # flat, zero-padded tiles
    q = q_bytes.view(dtype)
    got = ew.dequantize_blocks(q, given, target_dtype, swizzled=swizzled)
    assert got.shape == shape and got.dtype == target_dtype
    flat_q, flat_s = q_bytes.flatten(), scale_bytes.flatten()

    def inputs(i):
        code = int(flat_q[i // 2]) >> (4 * (i % 2)) & 0xF if packed else int(flat_q[i])
        return " (code 0x%x, scale 0x%02x)" % (code, int(flat_s[i // 32]))
    what = "MX dequantize %s -> %s %s%s" % (names(element), target, shape, " swizzled" if swizzled else "")
    assert_same_values(torch, got, want, what, inputs)
    # Into a poisoned out; a uint8 q naming its elements with in_dtype= (what CuPy and torchao's fp4 hold).
    out = torch.full(shape, float("nan"), dtype=target_dtype, device="cuda")
    assert ew.dequantize_blocks(q_bytes, given, out=out, in_dtype=element, swizzled=swizzled) is out
    assert_same_values(torch, out, want, what + " into out=, q uint8", inputs)


def test_torchaos_own_mx_tensors_go_in_as_they_are(torch, tao):
    # to_mx's outputs: (*leading, cols / 32) e8m0 scales, uint8 fp4 data, swizzled scales of its own shape.
    x = block_input(torch, (2, 3, 128), torch.bfloat16, 7, 32, 6.0)
    scales, q = tao.mx.to_mx(x, torch.float4_e2m1fn_x2, 32)
    assert scales.shape == (2, 3, 4) and q.dtype == torch.uint8
    want = tao.mx.to_dtype(q, scales, torch.float4_e2m1fn_x2, 32, torch.bfloat16)
    assert_same_values(torch, ew.dequantize_blocks(q, scales, torch.bfloat16, in_dtype="f4e2m1"), want, "fp4 3-d")
    flat = x.reshape(6, 128)
    swizzled, q2 = tao.mx.to_mx(flat, torch.float8_e4m3fn, 32, is_swizzled_scales=True)
    assert swizzled.shape == (32, 16)  # torchao's own 2-d shape of the 128 x 4 tile
    back = ew.dequantize_blocks(q2, swizzled, torch.float32, swizzled=True)
    rowmajor, _ = tao.mx.to_mx(flat, torch.float8_e4m3fn, 32)
    assert_same_values(torch, back, tao.mx.to_dtype(q2, rowmajor, torch.float8_e4m3fn, 32, torch.float32), "swizzled")


def test_rceil_scales_are_exact_where_torchaos_log2_rounds(torch, tao):
    """§11.2: the RCEIL exponent is the exact one of d = amax * f32(1/max), from d's bits; torchao takes
    ceil(log2(d)) in f32, which can round a d one ulp above a power of two down onto it. f32 data whose
    amax sits just above max * 2^k shows where the two part; the library must give the exact exponent,
    and where torchao differs, a warning says how often (the disagreement docs/semantics.md notes)."""
    element_max = 448.0
    k = torch.arange(-60, 60, device="cuda", dtype=torch.float32)
    top = (element_max * torch.exp2(k))
    amax = torch.nextafter(top, torch.full_like(top, float("inf")))
    x = torch.zeros(k.numel(), 32, device="cuda")
    x[:, 0] = amax
    x[:, 1] = -top / 2
    q, scales = ew.quantize_blocks(x, torch.float8_e4m3fn, round_up=True)
    d = amax * (1.0 / element_max)  # a multiplication by f32(1/448), as the reference's division computes it
    bits = d.view(torch.int32)
    exponent = ((bits >> 23) & 0xFF) - 127 + ((bits & 0x7FFFFF) != 0).int()
    want = (exponent.clamp(-127, 127) + 127).to(torch.uint8)
    assert_same_bytes(torch, scales, want, "RCEIL exponents from d's bits")
    torchao_scales, _ = tao.mx.to_mx(x, torch.float8_e4m3fn, 32, scaling_mode=tao.modes.RCEIL)
    differ = int((as_bytes(torch, torchao_scales) != want).sum())
    if differ:
        warnings.warn("torchao's RCEIL (ceil(log2(d)) in f32) differs from the exact exponent in %d of %d blocks "
                      "whose amax is one f32 ulp above 448 * 2^k" % (differ, k.numel()))


# ---- NVFP4 ----

GLOBAL_SCALES = [None, "amax", 1.0, 0.37, 2.0 ** -10, 0.0, float("nan")]


def global_scale_of(torch, choice, x):
    if choice is None:
        return None
    if choice == "amax":  # the full-range choice: amax / (448 * 6), amax of the finite values
        finite = x.float().abs()
        amax = torch.where(finite.isfinite(), finite, torch.zeros_like(finite)).max()
        return amax / (448.0 * 6.0)
    return torch.tensor(choice, dtype=torch.float32, device="cuda")


@pytest.mark.parametrize("choice", GLOBAL_SCALES, ids=lambda c: "g-%s" % c)
@pytest.mark.parametrize("swizzled", [False, True], ids=["rowmajor", "swizzled"])
@pytest.mark.parametrize("shape", SHAPES, ids=names)
@pytest.mark.parametrize("source", SOURCES)
def test_nvfp4_quantize_matches_torchao(torch, tao, source, shape, swizzled, choice):
    x = block_input(torch, shape, getattr(torch, source), seed_of("nv", source, shape), 16, 6.0)
    g = global_scale_of(torch, choice, x)
    want_scales, want_q = tao.nv.nvfp4_quantize(reference_input(torch, x), 16, g)
    assert want_q.dtype == torch.uint8 and want_scales.dtype == torch.float8_e4m3fn
    if swizzled:
        want_scales = tao.utils.to_blocked(want_scales.view(rows_of(shape), shape[-1] // 16))
    what = "NVFP4 from %s %s, global scale %s%s" % (source, shape, choice, " swizzled" if swizzled else "")

    q, scales = ew.quantize_blocks(x, format="nvfp4", global_scale=g, swizzled=swizzled)
    assert q.dtype == torch.float4_e2m1fn_x2 and q.shape == (*shape[:-1], shape[-1] // 2)
    assert scales.dtype == torch.float8_e4m3fn
    assert scales.shape == ew.block_scales_shape(shape, "nvfp4", swizzled=swizzled)
    assert_same_bytes(torch, q, want_q, what + ": elements", element_context(torch, x, 16, True))
    assert_same_bytes(torch, scales, want_scales, what + ": scales", None if swizzled else scale_context(torch, x, 16))
    # uint8 outputs (torchao's own types for them), poisoned first
    out = torch.full(q.shape, 0xA5, dtype=torch.uint8, device="cuda")
    given = torch.full(scales.shape, 0xA5, dtype=torch.uint8, device="cuda")
    assert ew.quantize_blocks(x, format="nvfp4", global_scale=g, swizzled=swizzled, out=out, scales=given) == \
        (out, given)
    assert_same_bytes(torch, out, want_q, what + ": elements into a uint8 out")
    assert_same_bytes(torch, given, want_scales, what + ": scales into uint8 scales")


@pytest.mark.parametrize("choice", [None, 0.37, "amax"], ids=lambda c: "g-%s" % c)
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("swizzled", [False, True], ids=["rowmajor", "swizzled"])
@pytest.mark.parametrize("shape", SHAPES, ids=names)
def test_nvfp4_dequantize_matches_torchaos_arithmetic(torch, tao, shape, swizzled, target, choice):
    target_dtype = getattr(torch, target)
    seed = seed_of("nvd", shape)
    q = random_bytes(torch, (*shape[:-1], shape[-1] // 2), seed)  # every e2m1 pair
    scales = random_bytes(torch, (rows_of(shape), shape[-1] // 16), seed + 1)  # every e4m3 byte, NaN included
    g = global_scale_of(torch, choice, torch.randn(64, device="cuda") * 1000)
    # NVFP4Tensor.dequantize: data_f32 * (per_tensor_scale * scale.float()), then the dtype
    data = tao.kernels.f4_unpacked_to_f32(tao.kernels.unpack_uint4(q)).view(rows_of(shape), -1, 16)
    scale = scales.view(torch.float8_e4m3fn).to(torch.float32)
    hp = scale if g is None else g * scale
    want = (data * hp.view(rows_of(shape), -1, 1)).view(shape).to(target_dtype)
    given = tao.utils.to_blocked(scales) if swizzled else scales.view(torch.float8_e4m3fn)
    got = ew.dequantize_blocks(q.view(torch.float4_e2m1fn_x2), given, target_dtype, format="nvfp4",
                               global_scale=g, swizzled=swizzled)
    flat_q, flat_s = q.flatten(), scales.flatten()

    def inputs(i):
        return " (code 0x%x, scale 0x%02x)" % (int(flat_q[i // 2]) >> (4 * (i % 2)) & 0xF, int(flat_s[i // 16]))
    what = "NVFP4 dequantize -> %s %s, global scale %s%s" % (target, shape, choice, " swizzled" if swizzled else "")
    assert_same_values(torch, got, want, what, inputs)
    # a uint8 q is NVFP4's float4
    out = torch.empty(shape, dtype=target_dtype, device="cuda")
    assert ew.dequantize_blocks(q, given, out=out, format="nvfp4", global_scale=g, swizzled=swizzled) is out
    assert_same_values(torch, out, want, what + ", q uint8", inputs)


# ---- the calls on the GPU: streams, refusals, the C call's errors ----

def test_block_calls_run_on_the_current_stream(torch, tao):
    x = block_input(torch, (256, 1024), torch.bfloat16, 11, 32, 448.0)
    want_scales, want_q = tao.mx.to_mx(x, torch.float8_e4m3fn, 32)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        torch.cuda._sleep(200_000_000)  # the stream is busy: work queued elsewhere would run first
        q, scales = ew.quantize_blocks(x, torch.float8_e4m3fn)
        back = ew.dequantize_blocks(q, scales, torch.bfloat16)
    torch.cuda.current_stream().wait_stream(stream)
    assert_same_bytes(torch, q, want_q, "on a side stream: elements")
    assert_same_bytes(torch, scales, want_scales, "on a side stream: scales")
    assert_same_values(torch, back, tao.mx.to_dtype(want_q, want_scales, torch.float8_e4m3fn, 32, torch.bfloat16),
                       "on a side stream: dequantized")


def test_block_calls_refuse_what_the_library_refuses(torch, handle):
    x = torch.randn(4, 64, device="cuda")
    g = torch.ones((), device="cuda")
    cases = [
        (lambda: ew.quantize_blocks(x, torch.float8_e4m3fn, format="nvfp4"), "ew_quantize_blocks",
         ew.Status.NOT_SUPPORTED),
        (lambda: ew.quantize_blocks(x.double(), torch.float8_e4m3fn), "ew_quantize_blocks", ew.Status.NOT_SUPPORTED),
        (lambda: ew.quantize_blocks(x, torch.bfloat16), "ew_quantize_blocks", ew.Status.NOT_SUPPORTED),
        (lambda: ew.quantize_blocks(x, format="nvfp4", round_up=True), "ew_quantize_blocks", ew.Status.INVALID_VALUE),
        (lambda: ew.quantize_blocks(x, torch.float8_e4m3fn, global_scale=g), "ew_quantize_blocks",
         ew.Status.INVALID_VALUE),
        (lambda: ew.quantize_blocks(torch.randn(4, 48, device="cuda"), torch.float8_e4m3fn), "ew_block_scales_shape",
         ew.Status.INVALID_VALUE),
        (lambda: ew.dequantize_blocks(torch.zeros(4, 64, dtype=torch.float8_e4m3fn, device="cuda"),
                                      torch.zeros(4, 2, dtype=torch.uint8, device="cuda"), torch.float64),
         "ew_dequantize_blocks", ew.Status.NOT_SUPPORTED),
    ]
    for call, function, status in cases:
        with pytest.raises(ew.ElementwiseError) as caught:
            call()
        assert caught.value.function == function and caught.value.status == status, caught.value
        assert caught.value.message == ew._last_error_message()
    q = torch.empty(4, 64, dtype=torch.float8_e4m3fn, device="cuda")
    with pytest.raises(ew.ElementwiseError) as caught:  # scales inside out: the library's overlap check
        ew.quantize_blocks(x, torch.float8_e4m3fn, out=q, scales=q.view(torch.uint8).flatten()[8:16])
    assert caught.value.status == ew.Status.INVALID_VALUE and "overlaps" in caught.value.message
    with pytest.raises(ValueError, match="x is not contiguous"):
        ew.quantize_blocks(x.t(), torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="x: Tensor is a CPU array"):
        ew.quantize_blocks(x.cpu(), torch.float8_e4m3fn)


def test_empty_tensors_make_empty_results(torch, handle):
    q, scales = ew.quantize_blocks(torch.empty(0, 64, device="cuda"), torch.float8_e5m2)
    assert q.shape == (0, 64) and scales.shape == (0, 2)
    q, scales = ew.quantize_blocks(torch.empty(0, 32, device="cuda", dtype=torch.bfloat16), format="nvfp4",
                                   swizzled=True)
    assert q.shape == (0, 16) and scales.shape == (0, 4)
    assert ew.dequantize_blocks(q, scales, torch.float32, format="nvfp4", swizzled=True).shape == (0, 32)
