"""The known-good kernels that mutants are made from, and the mutants themselves.

Sources: every task's baseline.cu (tasks/ and tasks_realworld/), and every kernel file under
tests/sandbox/ whose header says `// expect: ok` and whose task (`// task: NAME`, default axpy,
as tests/sandbox/adversarial_files.h reads it) is a task of the suite: the good twins."""
import hashlib
import json
import pathlib
import re

import benchlib
import kernel_text as kt
from operators import OPERATORS, Kernel

ROOT = pathlib.Path(__file__).resolve().parents[2]
TASK_ROOTS = ("tasks", "tasks_realworld")


class Task(benchlib.Task):
    """A task directory (benchlib.Task) and the suite it belongs to (tasks, tasks_realworld)."""

    def __init__(self, directory):
        super().__init__(directory)
        self.suite = self.dir.parent.name


def load_tasks(root=ROOT):
    tasks = {}
    for suite in TASK_ROOTS:
        for d in sorted((root / suite).iterdir()):
            if (d / "task.json").exists():
                task = Task(d)
                tasks[task.name] = task
    return tasks


def _header(text):
    """The `// key: value` lines at the top of a test kernel."""
    header = {}
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        key, colon, value = line[2:].partition(":")
        if colon:
            header.setdefault(key.strip(), value.strip())
    return header


def good_kernels(tasks, root=ROOT):
    """[(relative path, task name, text)]: baselines first, then the good twins."""
    out = []
    for task in tasks.values():
        out.append((str((task.dir / "baseline.cu").relative_to(root)), task.name, task.baseline))
    for path in sorted((root / "tests" / "sandbox").rglob("*.cu")):
        text = path.read_text()
        header = _header(text)
        if header.get("expect") != "ok":
            continue
        task = header.get("task", "axpy")
        if task in tasks:
            out.append((str(path.relative_to(root)), task, text))
    return out


def mutant_id(text):
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _spread(items, count):
    """`count` items spread evenly over the list (all when it is short), order kept."""
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def mutants(tasks, sources, per_operator=5, operators=None):
    """Every mutant of every source, deduplicated by text: [{id, task, source, operator, site,
    text, diff}]. At most `per_operator` per (source, operator), spread over its sites, so one
    operator with many sites (a long kernel's every `long long`) does not drown the others."""
    seen = {}
    originals = {text for _, _, text in sources}
    out = []
    for path, task_name, text in sources:
        kernel = Kernel(text, tasks[task_name].spec, path)
        for op_name, op in OPERATORS.items():
            if operators and op_name not in operators:
                continue
            made = [(site, new) for site, new in op(kernel) if new != text]
            for site, new in _spread(made, per_operator):
                if new in originals or not kt.balanced(new):
                    continue
                mid = mutant_id(new)
                if mid in seen:
                    continue
                seen[mid] = True
                out.append({"id": mid, "task": task_name, "suite": tasks[task_name].suite,
                            "source": path, "operator": op_name, "site": site, "text": new,
                            "diff": kt.unified_diff(text, new, path)})
    return out


def load_equivalent(path):
    """{mutant id: why} from equivalent.json; every entry must say why."""
    if not pathlib.Path(path).exists():
        return {}
    entries = json.loads(pathlib.Path(path).read_text())
    out = {}
    for i, entry in enumerate(entries.get("equivalent", [])):
        why = entry.get("why", "").strip()
        if not why or not re.fullmatch(r"[0-9a-f]{12}", entry.get("id", "")):
            raise ValueError("%s: $.equivalent[%d]: needs an 'id' (12 hex digits) and a 'why'"
                             % (path, i))
        out[entry["id"]] = why
    return out
