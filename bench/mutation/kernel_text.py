"""Just enough of a CUDA kernel file's structure for mutation: where the code is (not comments,
strings or the kopt:plan), the launch plan, the kernels' parameter lists, and balanced brackets.

Operators match on `code_view(text)`, the text with every comment and string literal blanked to
spaces (offsets unchanged), and edit the original text at the same offsets: a pattern never
mutates a comment, and the plan (a comment) stays exactly as it was."""
import json
import re

PLAN_RE = re.compile(r"/\*\s*kopt:plan(.*?)\*/", re.S)


def code_view(text):
    """`text` with comments and string/char literals replaced by spaces, newlines kept."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def plan(text):
    """The kopt:plan object, or {} when the file has none."""
    match = PLAN_RE.search(text)
    return json.loads(match.group(1)) if match else {}


def matching(code, open_at):
    """Index of the bracket that closes the one at `open_at` in `code` (a code view), or -1."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener = code[open_at]
    closer = pairs[opener]
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == opener:
            depth += 1
        elif code[i] == closer:
            depth -= 1
            if depth == 0:
                return i
    return -1


def balanced(text):
    """True when (), [] and {} nest properly in the code (a cheap syntax check of a mutant)."""
    stack = []
    pairs = {")": "(", "]": "[", "}": "{"}
    for c in code_view(text):
        if c in "([{":
            stack.append(c)
        elif c in ")]}":
            if not stack or stack.pop() != pairs[c]:
                return False
    return not stack


KERNEL_RE = re.compile(r"__global__\s+void\s+(\w+)\s*\(")


def kernels(text):
    """{kernel name: [(type text, parameter name), ...]} for every __global__ function."""
    code = code_view(text)
    out = {}
    for match in KERNEL_RE.finditer(code):
        close = matching(code, match.end() - 1)
        params = []
        for part in code[match.end():close].split(","):
            part = " ".join(part.split())
            name = re.search(r"(\w+)\s*$", part)
            if name:
                params.append((part[:name.start()].strip(), name.group(1)))
        out[match.group(1)] = params
    return out


def function_bodies(text):
    """(start, end) of the body of every function defined in the file (after its `{`, before its
    `}`), kernels and __device__ helpers alike, in order."""
    code = code_view(text)
    spans = []
    for match in re.finditer(r"\b(\w+)\s*\(", code):
        if match.group(1) in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        close = matching(code, match.end() - 1)
        if close < 0:
            continue
        rest = re.match(r"\s*(const\s*)?\{", code[close + 1:])
        if not rest:
            continue
        # A definition is at file scope: no enclosing body already holds it.
        brace = close + 1 + rest.end() - 1
        if any(s <= brace < e for s, e in spans):
            continue
        end = matching(code, brace)
        if end > 0:
            spans.append((brace + 1, end))
    return spans


def scalar_bindings(text):
    """[(kernel, parameter, plan argument)] for every scalar parameter that the plan binds to a
    bare size or constant name (`cols`, `alpha`) or a typed expression (`i32:rows*cols`)."""
    the_plan = plan(text)
    params = kernels(text)
    out = []
    for launch in the_plan.get("launches", []):
        names = params.get(launch["kernel"], [])
        for (ptype, pname), arg in zip(names, launch.get("args", [])):
            if "*" in ptype:
                continue
            out.append((launch["kernel"], pname, arg))
    return out


def buffer_bindings(text):
    """{kernel: {parameter: plan buffer name}} for pointer parameters."""
    the_plan = plan(text)
    params = kernels(text)
    out = {}
    for launch in the_plan.get("launches", []):
        names = params.get(launch["kernel"], [])
        for (ptype, pname), arg in zip(names, launch.get("args", [])):
            if "*" in ptype:
                out.setdefault(launch["kernel"], {})[pname] = arg
    return out


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def unified_diff(before, after, name):
    import difflib
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True),
                                        "a/" + name, "b/" + name, n=1))
