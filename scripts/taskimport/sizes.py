"""Symbolic sizes from observed shapes (pure Python: no torch, so CI tests it with python3 alone).

An imported module is run once on its example inputs; what comes back is each tensor's name,
dtype and concrete shape. Every distinct dimension value becomes one size, named by the role of
the first axis where it appears (rows/cols, batch/channels/height/width, m/k/n for a matmul).
Sizes that appear in a parameter's shape (an nn.Linear's in_features) are fixed: the module was
built for them, so the sweep cannot change them."""

# Names by rank for a tensor's axes, first unused one wins.
_AXIS_NAMES = {
    1: ["n"],
    2: ["rows", "cols"],
    3: ["batch", "rows", "cols"],
    4: ["batch", "channels", "height", "width"],
    5: ["batch", "channels", "depth", "height", "width"],
}


# A parameter's new dimensions: an nn.Linear's [out, in], a conv's [out, in, kh, kw].
_PARAM_NAMES = {
    1: ["features"],
    2: ["out_features", "in_features"],
    3: ["out_channels", "in_channels", "kernel"],
    4: ["out_channels", "in_channels", "kernel_h", "kernel_w"],
}


def _axis_name(rank, axis, param=False):
    names = (_PARAM_NAMES if param else _AXIS_NAMES).get(rank)
    if names:
        return names[axis]
    return "d%d" % axis


def _matmul_layout(inputs):
    """A[(b,) m, k] @ B[(b,) k, n] (or B as nn.Linear's [n, k]): the size name of each axis of A
    and B, {(tensor, axis): name}, or {} when the first two inputs are not such a pair. Named by
    position, not by value, so a square matmul still has m, k and n apart."""
    mats = [t for t in inputs if len(t["shape"]) in (2, 3)][:2]
    if len(mats) < 2 or len(mats[0]["shape"]) != len(mats[1]["shape"]):
        return {}
    a, b = mats
    lead = ["b"] if len(a["shape"]) == 3 else []
    if lead and a["shape"][0] != b["shape"][0]:
        return {}
    m, k = a["shape"][-2:]
    b0, b1 = b["shape"][-2:]
    if k == b0:
        b_names = lead + ["k", "n"]
    elif k == b1:
        b_names = lead + ["n", "k"]
    else:
        return {}
    layout = {(a["name"], axis): name for axis, name in enumerate(lead + ["m", "k"])}
    layout.update({(b["name"], axis): name for axis, name in enumerate(b_names)})
    return layout


def _tied_axis(tensor, axis, earlier, dims, is_param):
    """The size of an earlier tensor's axis that this axis is the same as by position: an
    earlier tensor of the identical shape (q, k and v of an attention, x and y of an add: the
    same axis, whatever values happen to be equal elsewhere), or for a parameter an input whose
    trailing axes it matches (LayerNorm's weight over the normalized dims, a bias over the last
    one), as broadcasting aligns them."""
    shape = list(tensor["shape"])
    for other in earlier:
        if list(other["shape"]) == shape:
            return dims[(other["name"], axis)]
    if is_param:
        for other in earlier:
            o = list(other["shape"])
            if len(o) > len(shape) and o[len(o) - len(shape):] == shape:
                return dims[(other["name"], len(o) - len(shape) + axis)]
    return None


def derive_sizes(inputs, outputs, params=(), matmul=False):
    """-> (sizes {name: value}, fixed {names}, dims {(tensor, axis): name}).

    inputs/outputs/params: [{"name", "shape": [int]}]. An axis is the same size as an earlier
    tensor's when position says so (_tied_axis; a matmul's operands by _matmul_layout), else
    when an earlier tensor has its value; a value repeated within one tensor ([8192, 8192]) is a
    size per axis (the sweep then varies them apart). An output of the same shape as an input
    takes that input's sizes axis by axis; other output axes match by value, and those that
    match nothing are left out of `dims` (fit_output_shapes expresses them later). Every size a
    parameter's shape uses is fixed: the module was built for it."""
    sizes, by_value, dims = {}, {}, {}
    layout = _matmul_layout(inputs) if matmul else {}
    param_names = {t["name"] for t in params}
    earlier = []
    for tensor in list(inputs) + list(params):
        rank = len(tensor["shape"])
        is_param = tensor["name"] in param_names
        mine = set()  # sizes this tensor introduced
        for axis, value in enumerate(tensor["shape"]):
            name = layout.get((tensor["name"], axis))
            if name is not None and sizes.get(name, value) != value:
                name = None
            if name is None:
                name = _tied_axis(tensor, axis, earlier, dims, is_param)
            if name is None and value in by_value and by_value[value] not in mine:
                name = by_value[value]
            if name is None:
                base = _axis_name(rank, axis, is_param)
                name, i = base, 2
                while name in sizes:
                    name, i = "%s%d" % (base, i), i + 1
                mine.add(name)
            sizes.setdefault(name, value)
            by_value.setdefault(value, name)
            dims[(tensor["name"], axis)] = name
        earlier.append(tensor)
    for tensor in outputs:
        twin = next((t for t in inputs if list(t["shape"]) == list(tensor["shape"])), None)
        for axis, value in enumerate(tensor["shape"]):
            if twin is not None:
                dims[(tensor["name"], axis)] = dims[(twin["name"], axis)]
            elif value in by_value:
                dims[(tensor["name"], axis)] = by_value[value]
    fixed = {dims[(t["name"], axis)] for t in params for axis in range(len(t["shape"]))}
    return sizes, fixed, dims


def shape_exprs(tensor, dims):
    return [dims.get((tensor["name"], axis)) for axis in range(len(tensor["shape"]))]


def _candidates(size):
    yield size, lambda v: v
    for c in range(1, 16):
        yield "%s - %d" % (size, c), lambda v, c=c: v - c
        yield "%s + %d" % (size, c), lambda v, c=c: v + c
    for c in range(2, 9):
        yield "%s * %d" % (size, c), lambda v, c=c: v * c
        yield "%s / %d" % (size, c), lambda v, c=c: v // c


def fit_output_dim(observations, sizes):
    """An expression for one output axis from [(shape bindings, observed value)], or None.

    Tries a literal (the same value everywhere), then size, size +- c, size * c, size / c for
    each size: enough for reductions that keep a dim, pools and valid convolutions by stride 1
    or 2."""
    values = {v for _, v in observations}
    for size in sizes:
        for text, f in _candidates(size):
            if all(f(b[size]) == v for b, v in observations):
                return text
    if len(values) == 1:
        return str(values.pop())
    return None


def fit_output_shapes(outputs, dims, observations, sizes):
    """Fills every output axis of `dims`. observations: [(bindings, {output: shape})]; an axis
    matched by value to a size at the default shape that the other shapes contradict (a conv's
    h - 2 that equals another size) is fitted again. -> problems (axes that follow nothing)."""
    problems = []
    for tensor in outputs:
        for axis in range(len(tensor["shape"])):
            name = dims.get((tensor["name"], axis))
            if name in sizes and all(shapes[tensor["name"]][axis] == b[name]
                                     for b, shapes in observations):
                continue
            obs = [(b, shapes[tensor["name"]][axis]) for b, shapes in observations]
            text = fit_output_dim(obs, sizes)
            if text is None:
                problems.append("output '%s' axis %d (%s) follows no expression over the sizes"
                                % (tensor["name"], axis, sorted({v for _, v in obs})))
            else:
                dims[(tensor["name"], axis)] = text
    return problems
