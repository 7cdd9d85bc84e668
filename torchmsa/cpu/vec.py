"""Lane vectors for numba kernels: LLVM vector values made and combined by small intrinsics.

:class:`Vec` is ``count`` lanes of an integer type, an LLVM ``<count x iN>`` value, so a kernel
keeps its carried vectors as SSA values (in registers) instead of lane loops over a workspace.
A "proto" (:func:`lanes`: an intrinsic returning a zero vector) picks the lane type and count;
:func:`vsplat` and :func:`vload` take it as their last argument. Loads and stores are unaligned
and unchecked: the callers keep ``idx .. idx + count`` inside the array.

Signed lanes: :func:`vmax`, :func:`vany_gt`, :func:`vhmax` (the striped local kernel,
:mod:`torchmsa.cpu.dp_long`). Bitwise and unsigned lanes: :func:`vand`, :func:`vor`,
:func:`vxor`, :func:`vandnot`, :func:`vshr` (logical), :func:`vpopcount` (``llvm.ctpop``)
(the bit-parallel LCS, :mod:`torchmsa.cpu.lcs`).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model

__all__ = [
    "Vec",
    "lanes",
    "lane_count",
    "vsplat",
    "vload",
    "vstore",
    "vadd",
    "vsub",
    "vmax",
    "vany_gt",
    "vshift_in",
    "vhmax",
    "vand",
    "vor",
    "vxor",
    "vandnot",
    "vshr",
    "vpopcount",
]


class Vec(types.Type):
    """``count`` lanes of the integer type ``dtype``, an LLVM ``<count x iN>`` value."""

    def __init__(self, dtype, count):
        self.dtype, self.count = dtype, count
        super().__init__(name=f"Vec({dtype}x{count})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _ltype(fe_type))


def _ltype(vt):
    return ir.VectorType(ir.IntType(vt.dtype.bitwidth), vt.count)


def _i32s(values):
    return ir.Constant(ir.VectorType(ir.IntType(32), len(values)), list(values))


def lanes(dtype, count):
    """An intrinsic returning a zero vector of ``count`` x ``dtype``: its type picks the width."""
    vt = Vec(dtype, count)

    @intrinsic
    def proto(typingctx):
        def codegen(context, builder, sig, args):
            return ir.Constant(_ltype(vt), None)

        return vt(), codegen

    return proto


@intrinsic
def lane_count(typingctx, v):
    """The lane count of ``v`` (a constant)."""

    def codegen(context, builder, sig, args):
        return ir.Constant(ir.IntType(64), v.count)

    return types.intp(v), codegen


def _splat(builder, vt, x):
    lt = _ltype(vt)
    one = builder.insert_element(ir.Constant(lt, ir.Undefined), x, ir.Constant(ir.IntType(32), 0))
    return builder.shuffle_vector(one, ir.Constant(lt, ir.Undefined), _i32s([0] * vt.count))


@intrinsic
def vsplat(typingctx, x, proto):
    """``x`` (cast to the lane type) in every lane."""

    def codegen(context, builder, sig, args):
        return _splat(builder, proto, context.cast(builder, args[0], x, proto.dtype))

    return proto(x, proto), codegen


def _lane_ptr(context, builder, arr, ary, idx, vt):
    data = context.make_array(arr)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [idx]), _ltype(vt).as_pointer())


@intrinsic
def vload(typingctx, arr, idx, proto):
    """``arr[idx : idx + count]`` (no bounds check, unaligned)."""

    def codegen(context, builder, sig, args):
        ptr = _lane_ptr(context, builder, arr, args[0], args[1], proto)
        return builder.load(ptr, align=proto.dtype.bitwidth // 8)

    return proto(arr, idx, proto), codegen


@intrinsic
def vstore(typingctx, arr, idx, v):
    """``arr[idx : idx + count] = v`` (no bounds check, unaligned)."""

    def codegen(context, builder, sig, args):
        ptr = _lane_ptr(context, builder, arr, args[0], args[1], v)
        builder.store(args[2], ptr, align=v.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.none(arr, idx, v), codegen


def _llvm_call(builder, intrinsic_name, vt, returns, value):
    """A call of the LLVM intrinsic ``intrinsic_name`` overloaded on ``vt``'s vector type."""
    lt = _ltype(vt)
    name = f"{intrinsic_name}.v{vt.count}i{vt.dtype.bitwidth}"
    fn = builder.module.declare_intrinsic(name, fnty=ir.FunctionType(returns, [lt]))
    return builder.call(fn, [value])


def _binary(op, doc):
    @intrinsic
    def fn(typingctx, x, y):
        def codegen(context, builder, sig, args):
            return op(builder, args[0], args[1])

        return x(x, y), codegen

    fn.__doc__ = doc
    return fn


vadd = _binary(lambda b, x, y: b.add(x, y), "Lanewise ``x + y`` (wrapping).")
vsub = _binary(lambda b, x, y: b.sub(x, y), "Lanewise ``x - y`` (wrapping).")
vmax = _binary(lambda b, x, y: b.select(b.icmp_signed(">", x, y), x, y), "Lanewise signed maximum.")
vand = _binary(lambda b, x, y: b.and_(x, y), "Lanewise ``x & y``.")
vor = _binary(lambda b, x, y: b.or_(x, y), "Lanewise ``x | y``.")
vxor = _binary(lambda b, x, y: b.xor(x, y), "Lanewise ``x ^ y``.")
vandnot = _binary(lambda b, x, y: b.and_(x, b.not_(y)), "Lanewise ``x & ~y``.")


@intrinsic
def vshr(typingctx, x, k):
    """Lanewise logical ``x >> k`` (``k`` a scalar below the lane width)."""

    def codegen(context, builder, sig, args):
        return builder.lshr(args[0], _splat(builder, x, context.cast(builder, args[1], k, x.dtype)))

    return x(x, k), codegen


@intrinsic
def vpopcount(typingctx, x):
    """Lanewise count of set bits (``llvm.ctpop``)."""

    def codegen(context, builder, sig, args):
        return _llvm_call(builder, "llvm.ctpop", x, _ltype(x), args[0])

    return x(x), codegen


@intrinsic
def vany_gt(typingctx, x, y):
    """Whether ``x > y`` (signed) in some lane."""

    def codegen(context, builder, sig, args):
        bits = builder.bitcast(builder.icmp_signed(">", args[0], args[1]), ir.IntType(x.count))
        return builder.icmp_unsigned("!=", bits, ir.Constant(ir.IntType(x.count), 0))

    return types.boolean(x, y), codegen


@intrinsic
def vshift_in(typingctx, v, x):
    """Lane ``l - 1`` of ``v`` moves to lane ``l``; ``x`` enters lane 0."""

    def codegen(context, builder, sig, args):
        first = _splat(builder, v, context.cast(builder, args[1], x, v.dtype))
        mask = [v.count] + list(range(v.count - 1))  # index count: lane 0 of ``first``
        return builder.shuffle_vector(args[0], first, _i32s(mask))

    return v(v, x), codegen


@intrinsic
def vhmax(typingctx, v):
    """The largest lane (signed)."""

    def codegen(context, builder, sig, args):
        return _llvm_call(builder, "llvm.vector.reduce.smax", v, _ltype(v).element, args[0])

    return v.dtype(v), codegen
