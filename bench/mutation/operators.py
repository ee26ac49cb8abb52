"""Semantic mutation operators for CUDA kernel files (bench/README.md, "Mutation testing").

Each operator takes a Kernel (the file's text, its code view, its task) and returns
[(site, mutated text)]: one change per mutant, each a plausible optimisation slip that a correct
kernel could have been one edit away from (issue 32's classes). Operators match on the code view
(comments, strings and the kopt:plan blanked) and edit only function bodies and #define lines, so
the launch plan never changes: what is judged is the kernel, not a different plan."""
import re

import kernel_text as kt

# Integer sizes the operators reason about: evaluated from task.json at the listed shapes.
_CEIL_DIV = "def ceil_div(a, b):\n    return -(-a // b)\n"


def evaluate(expr, sizes):
    """An integer plan expression at `sizes` (None when it names something else)."""
    scope = {"min": min, "max": max}
    exec(_CEIL_DIV, scope)
    scope.update(sizes)
    try:
        value = eval(expr.replace("/", "//"), {"__builtins__": {}}, scope)
    except Exception:
        return None
    return value if isinstance(value, int) else None


class Kernel:
    """A known-good kernel file and the task it belongs to."""

    def __init__(self, text, task_spec, origin):
        self.text = text
        self.code = kt.code_view(text)
        self.task = task_spec
        self.origin = origin
        self.bodies = kt.function_bodies(text)
        self.scalars = kt.scalar_bindings(text)
        self.buffers = kt.buffer_bindings(text)
        self.tunables = set(kt.plan(text).get("tunables", {}))
        self.defines = set(re.findall(r"^[ \t]*#define[ \t]+(\w+)[ \t]+\S", self.code, re.M))

    def listed_shapes(self):
        """Every shape the task lists (sweep, holdouts, the default) as full size maps."""
        base = self.task["sizes"]
        shapes = [dict(base)]
        for entry in self.task.get("shapes", []) + self.task.get("holdout", []):
            shape = dict(base)
            shape.update(entry)
            shapes.append(shape)
        return shapes

    def in_body(self, offset):
        return any(s <= offset < e for s, e in self.bodies)

    def body_of(self, offset):
        for s, e in self.bodies:
            if s <= offset < e:
                return s, e
        return None

    def body_matches(self, pattern, flags=0):
        """Matches of `pattern` on the code view that start inside a function body."""
        return [m for m in re.finditer(pattern, self.code, flags) if self.in_body(m.start())]

    def edit(self, start, end, replacement):
        return self.text[:start] + replacement + self.text[end:]

    def site(self, offset, what):
        return "line %d: %s" % (kt.line_of(self.text, offset), what)

    def scalar_names(self):
        """{parameter name: plan argument} of the kernels' scalar parameters."""
        return {p: a for _, p, a in self.scalars}

    def statement_end(self, offset):
        """Index just past the `;` that ends the statement holding `offset` (depth 0)."""
        depth = 0
        for i in range(offset, len(self.code)):
            c = self.code[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    return -1
                depth -= 1
            elif c == ";" and depth == 0:
                return i + 1
        return -1


def _size_arg(arg):
    """The size expression a plan argument binds (`cols`, `i32:rows*cols`), else None."""
    if arg.startswith(("i32:", "i64:")):
        return arg[4:]
    if ":" in arg:
        return None
    return arg


# ---------------------------------------------------------------------------- bounds

def bound_cap(k):
    """`x < n` -> `x < min(n, CAP)`: a size limit hard-coded at the largest value the task lists
    (the real-world slips of issue 32: every listed shape passes, a longer row does not)."""
    out = []
    names = k.scalar_names()
    for match in k.body_matches(r"(<=?)\s*(\w+)\b(?!\s*[\[(.])"):
        name = match.group(2)
        expr = _size_arg(names.get(name, ""))
        if not expr:
            continue
        values = [evaluate(expr, s) for s in k.listed_shapes()]
        if None in values or max(values) < 2:
            continue
        cap = max(values)
        if len(set(values)) == 1:
            cap = max(2, cap // 2)  # a fixed size: the cap must bite somewhere
        start = match.start(2)
        new = "min(%s, (decltype(%s))%d)" % (name, name, cap)
        out.append((k.site(start, "%s %s -> %s %s" % (match.group(1), name, match.group(1), new)),
                    k.edit(start, match.end(2), new)))
    return out


def literal_shift(k):
    """An integer literal or tunable in a bound or a #define moved by one (256 -> 255, 257)."""
    out = []
    for match in re.finditer(r"^[ \t]*#define[ \t]+(\w+)[ \t]+(\d+)\b", k.code, re.M):
        value = int(match.group(2))
        if value < 2:
            continue
        for new in (value - 1, value + 1):
            out.append((k.site(match.start(2), "#define %s %d -> %d" % (match.group(1), value, new)),
                        k.edit(match.start(2), match.end(2), str(new))))
    for match in k.body_matches(r"(<=|>=|<|>)\s*(\d+|[A-Z][A-Z0-9_]*)\b(?![.\w(\[])"):
        token = match.group(2)
        if token.isdigit():
            if int(token) < 2:
                continue
            choices = [str(int(token) - 1), str(int(token) + 1)]
        elif token in k.tunables or token in k.defines:
            choices = ["(%s - 1)" % token, "(%s + 1)" % token]
        else:
            continue
        for new in choices:
            out.append((k.site(match.start(2), "%s %s -> %s %s" % (match.group(1), token,
                                                                     match.group(1), new)),
                        k.edit(match.start(2), match.end(2), new)))
    return out


# ---------------------------------------------------------------------------- precision

def narrow_index(k):
    """64-bit index math in 32 bits: `long long`/`size_t`/`int64_t` -> `int` (one at a time)."""
    out = []
    pattern = r"\b(unsigned\s+long\s+long|long\s+long|size_t|int64_t|uint64_t|ptrdiff_t)\b"
    for match in k.body_matches(pattern):
        new = "unsigned" if match.group(1).startswith(("unsigned", "size_t", "uint")) else "int"
        out.append((k.site(match.start(), "%s -> %s" % (" ".join(match.group(1).split()), new)),
                    k.edit(match.start(), match.end(), new)))
    return out


def _with_include(text, header):
    if "#include <%s>" % header in text:
        return text
    match = kt.PLAN_RE.search(text)
    at = match.end() + 1 if match else 0
    return text[:at] + "#include <%s>\n" % header + text[at:]


_ROUNDING = {
    "float": [("__half", "cuda_fp16.h", "__half2float(__float2half(%s))"),
              ("__nv_bfloat16", "cuda_bf16.h", "__bfloat162float(__float2bfloat16(%s))")],
    "double": [("float", None, "(double)(float)(%s)")],
}


def narrow_accumulator(k):
    """An accumulator kept in a narrower type: every update of one float accumulator rounded
    through __half or __nv_bfloat16, of a double through float (`acc += v` -> `acc =
    __half2float(__float2half(acc + (v)))`). Rounding each update, rather than retyping the
    variable, is what an fp16 accumulator does, and it compiles wherever the original does."""
    out = []
    for match in k.body_matches(r"\b(float|double)\s+(\w+)\s*(\[[^\]]*\])?\s*[=;]"):
        kind, name = match.group(1), match.group(2)
        body = k.body_of(match.start())
        updates = []
        pattern = r"(?<![.\w])%s\s*(\[[^\]]*\])?\s*([-+*/]?)=(?!=)" % name
        for update in re.finditer(pattern, k.code[match.end():body[1]]):
            at = match.end() + update.start()
            rhs = match.end() + update.end()
            end = k.statement_end(rhs)
            if end < 0:
                continue
            updates.append((at, match.end() + update.end(), end - 1, update.group(1) or "",
                            update.group(2)))
        if not any(u[4] or re.search(r"\b%s\b" % name, k.code[u[1]:u[2]]) for u in updates):
            continue  # never accumulated: `float v = x[i];` is no accumulator
        for narrow, header, rounding in _ROUNDING[kind]:
            text = k.text
            for at, rhs, end, index, op in reversed(updates):
                value = k.text[rhs:end].strip()
                full = "%s%s %s (%s)" % (name, index, op, value) if op else value
                text = text[:at] + "%s%s = %s" % (name, index, rounding % full) + text[end:]
            if header:
                text = _with_include(text, header)
            out.append((k.site(match.start(), "%s %s accumulated in %s" % (kind, name, narrow)),
                        text))
    return out


# ---------------------------------------------------------------------------- terms dropped

def _term_span(code, at):
    """(start, end) of `+ TERM` around the identifier at `at`: from the `+` before the term to
    the end of the term, at the identifier's bracket depth; None when the term is not added."""
    depth, i = 0, at - 1
    while i >= 0:
        c = code[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and c in "+-*/,;=?:":
            break
        i -= 1
    # Prefix casts/calls: `+ __bfloat162float(bias[c])` starts at the call.
    start = i
    if start >= 0 and code[start] == "(":
        j = start - 1
        while j >= 0 and (code[j].isalnum() or code[j] == "_"):
            j -= 1
        k = j
        while k >= 0 and code[k] == " ":
            k -= 1
        if k >= 0 and code[k] == "+" and j < start - 1:
            close = kt.matching(code, start)
            return k, close + 1
        return None
    if start < 0 or code[start] != "+":
        return None
    depth, end = 0, at
    while end < len(code):
        c = code[end]
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and c in "+-;,?:":
            break
        end += 1
    return start, end


def drop_term(k):
    """An eps or a bias term dropped: `var + eps` -> `var`, `+ bias[c]` -> nothing."""
    out = []
    for match in k.body_matches(r"\b(eps\w*|epsilon|bias\w*|b_\w+)\b"):
        span = _term_span(k.code, match.start())
        if not span:
            continue
        start, end = span
        out.append((k.site(start, "dropped '%s'" % " ".join(k.text[start:end].split())),
                    k.edit(start, end, "")))
    return out


def drop_sync(k):
    """A __syncthreads(), __syncwarp() or __threadfence() removed."""
    out = []
    for match in k.body_matches(r"\b(__syncthreads|__syncwarp|__threadfence\w*)\s*\([^()]*\)\s*;"):
        out.append((k.site(match.start(), match.group(1) + "() removed"),
                    k.edit(match.start(), match.end(), "")))
    return out


def _is_bound(cond):
    """A condition with an ordering comparison (shifts and `->` are not comparisons)."""
    return re.search(r"[<>]", re.sub(r"<<|>>|->", "", cond))


def _names_bound(k, cond):
    """The condition compares against a bound: a size or constant parameter, a tunable, a
    #define, or a thread index (a max selection `v > best ? v : best` is no bound check)."""
    bounds = set(k.scalar_names()) | k.tunables | k.defines
    return "threadIdx" in cond or bool(set(re.findall(r"[A-Za-z_]\w*", cond)) & bounds)


def drop_guard(k):
    """A bound check removed: `if (i >= n) return;`, `if (i < n) stmt;`, `i < n ? v : 0`."""
    out = []
    for match in k.body_matches(r"\bif\s*\("):
        close = kt.matching(k.code, match.end() - 1)
        cond = k.code[match.end():close]
        if not _is_bound(cond) or not _names_bound(k, cond):
            continue
        rest = k.code[close + 1:]
        ret = re.match(r"\s*return\s*;", rest)
        if ret:
            end = close + 1 + ret.end()
            out.append((k.site(match.start(), "removed 'if (%s) return;'" % " ".join(cond.split())),
                        k.edit(match.start(), end, "")))
            continue
        if re.match(r"\s*\{", rest):
            continue  # a guarded block: its else-branch and scope make removal a rewrite
        end = k.statement_end(close + 1)
        if end < 0 or re.match(r"\s*else\b", k.code[end:]):
            continue
        out.append((k.site(match.start(), "unguarded 'if (%s)'" % " ".join(cond.split())),
                    k.edit(match.start(), close + 1, "")))
    for match in k.body_matches(r"([\w.\[\]+* ]+?(<=|>=|<|>)[\w.\[\]()+* ]+?)\?"):
        cond = match.group(1)
        if not _is_bound(cond) or not _names_bound(k, cond) or "(" in cond and ")" not in cond:
            continue
        start = match.start(1) + len(cond) - len(cond.lstrip())
        # The true branch runs to the ':' at depth 0; the false branch to the expression's end.
        depth, colon = 0, -1
        for i in range(match.end(), len(k.code)):
            c = k.code[i]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c == ":" and depth == 0:
                colon = i
                break
            if depth < 0 or c == ";":
                break
        if colon < 0:
            continue
        depth, end = 0, colon + 1
        while end < len(k.code):
            c = k.code[end]
            if c in "([":
                depth += 1
            elif c in ")]":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and c in ";,":
                break
            end += 1
        chosen = k.text[match.end():colon].strip()
        out.append((k.site(start, "'%s ? %s : ...' -> '%s'" % (" ".join(cond.split()), chosen,
                                                               chosen)),
                    k.edit(start, end, "(" + chosen + ")")))
    return out


def drop_tail(k):
    """A tail loop removed: the scalar loop after a vectorised one (its start is a multiple of
    the vector width) or the scalar `else` branch of a vectorised path."""
    out = []
    for match in k.body_matches(r"\bfor\s*\("):
        close = kt.matching(k.code, match.end() - 1)
        init = k.code[match.end():close].split(";")[0]
        if not re.search(r"\*\s*\d+\s*\+|\b(first|tail|rem\w*|vec\w*_end|done)\b", init):
            continue
        rest = k.code[close + 1:]
        block = re.match(r"\s*\{", rest)
        end = kt.matching(k.code, close + 1 + block.end() - 1) + 1 if block else \
            k.statement_end(close + 1)
        if end <= 0:
            continue
        out.append((k.site(match.start(), "tail loop 'for (%s...)' removed" %
                           " ".join(init.split())), k.edit(match.start(), end, "")))
    for match in k.body_matches(r"\belse\s*\{"):
        close = kt.matching(k.code, match.end() - 1)
        if "for" not in k.code[match.end():close]:
            continue
        out.append((k.site(match.start(), "scalar else-branch removed"),
                    k.edit(match.start(), close + 1, "")))
    return out


# ---------------------------------------------------------------------------- task constants

def fold_constant(k):
    """A task constant or size folded in: every use of a scalar parameter in its kernel replaced
    by the value at the task's default shape (a kernel specialised to the benchmark)."""
    out = []
    constants = k.task.get("constants", {})
    seen = set()
    for kernel, param, arg in k.scalars:
        if (kernel, param) in seen:
            continue
        seen.add((kernel, param))
        bare = arg.split(":", 1)[1] if ":" in arg else arg
        if bare in constants:
            literal = repr(float(constants[bare])) + "f"
        else:
            expr = _size_arg(arg)
            value = evaluate(expr, k.task["sizes"]) if expr else None
            if value is None:
                continue
            literal = str(value) + ("LL" if arg.startswith("i64:") else "")
        match = re.search(r"__global__\s+void\s+%s\s*\(" % kernel, k.code)
        close = kt.matching(k.code, match.end() - 1)
        body = k.body_of(k.code.find("{", close) + 1)
        if not body:
            continue
        uses = [m for m in re.finditer(r"(?<![.\w])%s\b(?!\s*\()" % param, k.code[body[0]:body[1]])]
        if not uses:
            continue
        text = k.text
        for use in reversed(uses):
            s, e = body[0] + use.start(), body[0] + use.end()
            text = text[:s] + literal + text[e:]
        out.append((k.site(body[0], "%s folded to %s in %s" % (param, literal, kernel)), text))
    return out


# ---------------------------------------------------------------------------- outputs

def _output_names(k):
    """Pointer names that hold a task output in some kernel: bound parameters and local
    pointers made from them (`float* out_row = out + ...`)."""
    outputs = {o["name"] for o in k.task.get("outputs", [])}
    names = set()
    for bindings in k.buffers.values():
        names |= {p for p, arg in bindings.items() if arg in outputs}
    for match in re.finditer(r"\*\s*(\w+)\s*=\s*(\w+)\b", k.code):
        if match.group(2) in names:
            names.add(match.group(1))
    return names


def _stores(k):
    """(start of `name[`, end of `]`, end of the statement) of each store to an output."""
    stores = []
    names = _output_names(k)
    if not names:
        return stores
    for match in k.body_matches(r"(?<![.\w])(%s)\s*\[" % "|".join(sorted(names))):
        close = kt.matching(k.code, match.end() - 1)
        assign = re.match(r"\s*=(?!=)", k.code[close + 1:])
        if not assign:
            continue
        end = k.statement_end(close + 1)
        if end < 0:
            continue
        stores.append((match.start(), close + 1, close + 1 + assign.end(), end))
    return stores


def output_read_first(k):
    """An output read before it is written: the store skipped when the output already holds a
    plausible finished value (not NaN, not huge), or the result accumulated into the output
    without initialising it."""
    out = []
    for start, lhs_end, rhs_start, end in _stores(k):
        lhs = k.text[start:lhs_end]
        rhs = k.text[rhs_start:end - 1].strip()
        guarded = "{ if (!(fabsf((float)(%s)) < 1e30f)) %s = %s; }" % (lhs, lhs, rhs)
        out.append((k.site(start, "store to %s skipped when it looks finished" % lhs),
                    k.edit(start, end, guarded)))
        out.append((k.site(start, "%s = ... -> %s += ..." % (lhs, lhs)),
                    k.edit(start, end, "%s += %s;" % (lhs, rhs))))
    return out


# ---------------------------------------------------------------------------- reductions

def reduction_off_by_one(k):
    """A reduction's start or stride off by one: `c = threadIdx.x` -> `threadIdx.x + 1`,
    `c += BLOCK` -> `c += BLOCK + 1`, a tree's `stride > 0` -> `stride > 1`."""
    out = []
    for match in k.body_matches(r"\bfor\s*\(\s*(int|unsigned|long long)?\s*(\w+)\s*=\s*"
                                r"(threadIdx\.x|lane|tid|t)\s*;"):
        s, e = match.start(3), match.end(3)
        out.append((k.site(s, "start %s -> %s + 1" % (match.group(3), match.group(3))),
                    k.edit(s, e, match.group(3) + " + 1")))
    for match in k.body_matches(r"\b(\w+)\s*\+=\s*(BLOCK\w*|blockDim\.x|32|WARP\w*|FINISH)\s*\)"):
        s, e = match.start(2), match.end(2)
        out.append((k.site(s, "stride %s -> %s + 1" % (match.group(2), match.group(2))),
                    k.edit(s, e, "(%s + 1)" % match.group(2))))
    for match in k.body_matches(r"\b(\w+)\s*>\s*0\s*;\s*\1\s*(/=\s*2|>>=\s*1)"):
        s = match.start()
        zero = k.code.index("0", s)
        out.append((k.site(s, "tree '%s > 0' -> '%s > 1'" % (match.group(1), match.group(1))),
                    k.edit(zero, zero + 1, "1")))
    return out


def _statement_start(code, offset, floor):
    """Index where the statement holding `offset` begins: after the `;`, `{` or `}` that ends
    the one before it at the same depth (a `for (...)` header's own `;` is inside parentheses)."""
    depth = 0
    for i in range(offset - 1, floor - 1, -1):
        c = code[i]
        if c in ")]":
            depth += 1
        elif c in "([":
            depth -= 1
        elif depth <= 0 and c in ";{}":
            return i + 1
    return floor


def drop_max_subtraction(k):
    """Softmax without the max: the max subtracted inside exp() set to 0 just before the first
    statement that uses it, so the kernel stays consistent (the sum, the normaliser and the
    outputs all see the same 0) and only the overflow guard is gone."""
    out = []
    done = set()
    for match in k.body_matches(r"\b(?:__)?expf?\s*\(([^()]*(?:\([^()]*\))?[^()]*)-\s*(\w+)\s*\)"):
        name = match.group(2)
        body = k.body_of(match.start())
        if (name, body) in done or name.isdigit() or not match.group(1).strip():
            continue  # `exp(-x)` subtracts nothing
        done.add((name, body))
        if not re.search(r"(?<![.\w])%s\s*=(?!=)" % name, k.code[body[0]:match.start()]):
            continue  # a parameter, not a max the kernel computes
        start = _statement_start(k.code, match.start(), body[0])
        while k.text[start] in " \t\n":
            start += 1
        out.append((k.site(start, "max '%s' set to 0 before its first exp" % name),
                    k.text[:start] + "%s = 0.0f; " % name + k.text[start:]))
    return out


OPERATORS = {
    "bound_cap": bound_cap,
    "literal_shift": literal_shift,
    "narrow_index": narrow_index,
    "narrow_accumulator": narrow_accumulator,
    "drop_term": drop_term,
    "drop_sync": drop_sync,
    "drop_guard": drop_guard,
    "drop_tail": drop_tail,
    "fold_constant": fold_constant,
    "output_read_first": output_read_first,
    "reduction_off_by_one": reduction_off_by_one,
    "drop_max_subtraction": drop_max_subtraction,
}
