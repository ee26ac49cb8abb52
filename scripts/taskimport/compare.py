"""The reference against the PyTorch module, element by element (pure Python on flat lists, so
the message a wrong reference gets is tested without a GPU)."""
import math


def unravel(index, shape):
    out = []
    for dim in reversed(shape):
        dim = max(dim, 1)
        out.append(index % dim)
        index //= dim
    return list(reversed(out))


def first_mismatch(reference, expected, tol):
    """Index of the first element outside tolerance (NaN where a number is expected counts;
    NaN where NaN is expected passes), else None; also None when more than min_pass_fraction
    pass and nothing exceeds max_error."""
    atol, rtol = tol.get("atol", 0), tol.get("rtol", 0)
    max_error = tol.get("max_error", float("inf"))
    need = tol.get("min_pass_fraction", 1.0)
    failed, first, worst = 0, None, None
    for i, (r, e) in enumerate(zip(reference, expected)):
        if math.isnan(e) and math.isnan(r):
            continue
        if r == e:
            continue
        diff = abs(r - e)
        bad = not diff <= atol + rtol * abs(e)  # NaN diff is bad
        if bad:
            failed += 1
            if first is None:
                first = i
        if not diff <= max_error:
            worst = i if worst is None else worst
    if worst is not None:
        return worst
    if failed and (len(expected) - failed) < need * len(expected):
        return first
    return None


def describe(output, position, r, e, where, tol):
    """position: the element's multi-index; r and e: the reference's and PyTorch's values."""
    at = ", ".join(str(i) for i in position)
    return ("reference.cu disagrees with the PyTorch module at %s: %s[%s] is %r from the "
            "reference and %r from PyTorch (|diff| %.3g; tolerance atol %g + rtol %g * |torch|, "
            "max_error %g)" % (where, output, at, r, e, abs(r - e) if not math.isnan(r - e)
                               else float("nan"), tol.get("atol", 0), tol.get("rtol", 0),
                               tol.get("max_error", float("inf"))))


def where_text(overrides_bound, round_name=None):
    shape = " ".join("%s=%d" % kv for kv in sorted(overrides_bound.items()))
    return "shape %s%s" % (shape or "(no sizes)",
                           " on stress round '%s'" % round_name if round_name else "")
