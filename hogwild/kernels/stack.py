"""Scratch arrays on the stack of a compiled loop: a kernel's per-sample buffer
with no heap allocation (the hot loops allocate nothing per sample)."""
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import populate_array


@intrinsic
def stack_array(typingctx, size, dtype):
    """An array of ``size`` (a compile-time constant) items of ``dtype`` (np.float32,
    np.float64, ...) on the stack of the compiled loop; its contents start undefined."""
    if not isinstance(size, types.IntegerLiteral) or not isinstance(dtype, types.NumberClass):
        return None
    n, item = size.literal_value, dtype.instance_type
    array_type = types.Array(item, 1, "C")

    def codegen(context, builder, signature, args):
        buffer = cgutils.alloca_once(builder, context.get_value_type(item), size=n)
        array = context.make_array(array_type)(context, builder)
        intp = lambda value: context.get_constant(types.intp, value)  # noqa: E731
        width = context.get_abi_sizeof(context.get_value_type(item))
        populate_array(array, data=buffer, shape=[intp(n)], strides=[intp(width)],
                       itemsize=intp(width), meminfo=None)
        return array._getvalue()

    return array_type(size, dtype), codegen
