"""The correctness sweep and the holdouts of an imported task (pure Python).

Edge sizes catch the usual tails: 1; 7 (not a multiple of 4: a vector path's tail); 36 (a
multiple of 4 but not of 32: a warp's tail); 160 (a multiple of 32 but not of 128: a block's
tail); the module's own size (the timed shape, `{}`); and a larger one within a byte budget
(index arithmetic past the example). Fixed sizes (a parameter's dimension) never change."""

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i64": 8, "e4m3": 1}
EDGES = (1, 7, 36, 160)
# What each edge is about, as the step that keeps it: 1 a lone element (then any odd size), 7 not a
# multiple of 4, 36 a multiple of 4 but not of 32, 160 of 32 but not of 128.
EDGE_STEPS = {1: 2, 7: 4, 36: 32, 160: 128}
LARGE_BYTES = 1 << 30     # the larger sweep shape holds at most this much
HOLDOUT_BYTES = 1 << 30   # or a quarter more than the example's shape, if that is larger


def evaluate(expr, sizes):
    """An integer shape expression (+ - * / and sizes), as the task format has them."""
    if isinstance(expr, int):
        return expr
    return int(eval(str(expr).replace("/", "//"), {"__builtins__": {}}, dict(sizes)))


def tensor_bytes(tensors, dims_of, sizes):
    """Bytes of the given tensors at `sizes`; dims_of(tensor) gives its shape expressions."""
    total = 0
    for t in tensors:
        count = 1
        for e in dims_of(t):
            count *= max(0, evaluate(e, sizes))
        total += count * DTYPE_BYTES[t["dtype"]]
    return total


def stand_ins(edge, limit):
    """Sizes that keep what `edge` is about, for a module that refuses the edge itself (a pool of
    kernel 4 on 1 element): edge + step * 2^i, below `limit`, smallest first."""
    step = EDGE_STEPS.get(edge, 2)
    out, i = [], 0
    while edge + step * (1 << i) < limit:
        out.append(edge + step * (1 << i))
        i += 1
    return out


def _bind(defaults, overrides):
    b = dict(defaults)
    b.update(overrides)
    return b


def propose_shapes(sizes, fixed, innermost, nbytes, valid=lambda b: True):
    """-> (sweep [overrides], holdout [overrides]).

    sizes: defaults; fixed: names never changed; innermost: the size the kernels vectorize over
    (the last axis of the first input), kept at the edge value while the others shrink when a
    shape would be too large; nbytes(bindings) -> bytes; valid(bindings) -> whether the module
    accepts it (an edge shape it refuses is replaced by a stand-in that keeps its tail, others are
    dropped)."""
    free = [s for s in sizes if s not in fixed]
    sweep, holdout = [], []

    def add(into, overrides, budget=None):
        """False only when the module refuses the shape."""
        overrides = {k: v for k, v in overrides.items() if v != sizes[k]}
        b = _bind(sizes, overrides)
        if any(v < 1 for v in b.values()) or overrides in sweep + holdout:
            return True
        if budget is not None and nbytes(b) > budget:
            return True
        if not valid(b):
            return False
        into.append(overrides)
        return True

    if not free:
        return [{}], []
    default_bytes = nbytes(sizes)
    for edge in EDGES:
        shape = {s: min(edge, sizes[s]) for s in free}
        # Too large (several free sizes at 160): the non-innermost ones shrink to 3, then 1.
        for small in (None, 3, 1):
            if small is not None:
                shape = {s: (v if s == innermost else min(small, v)) for s, v in shape.items()}
            if nbytes(_bind(sizes, shape)) <= max(default_bytes, 1 << 20):
                break
        if add(sweep, shape):
            continue
        # Refused: the same shape with the edge's sizes at a stand-in that keeps its tail.
        for value in stand_ins(edge, max(sizes[s] for s in free)):
            if add(sweep, {s: (min(value, sizes[s]) if v == min(edge, sizes[s]) else v)
                           for s, v in shape.items()}):
                break
    add(sweep, {})
    # Larger: the innermost free size (else the first) doubled plus one, within the budget.
    grow = innermost if innermost in free else free[0]
    add(sweep, {grow: sizes[grow] * 2 + 1}, budget=LARGE_BYTES)
    # Holdouts: the default shape with each free size one larger (an odd size near the timed
    # one), and 3/4 of it made odd.
    hold_budget = max(HOLDOUT_BYTES, default_bytes * 5 // 4)
    add(holdout, {s: sizes[s] + 1 for s in free}, budget=hold_budget)
    add(holdout, {s: max(1, sizes[s] * 3 // 4) | 1 for s in free}, budget=hold_budget)
    return sweep, holdout
