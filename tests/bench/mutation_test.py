#!/usr/bin/env python3
"""The mutation harness (bench/mutation/) without a GPU: each operator makes the intended change
on a sample kernel and nothing else (the plan and the comments stay as they were, brackets stay
balanced); the suite yields enough mutants over enough tasks; equivalent.json names only mutants
that exist; and the harness runs end to end against tests/bench/fake_sandbox.py and a fake
compile gate, resumes, and counts stillborn mutants apart. Run by ctest; prints 'N passed, N
failed'."""
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "mutation"))
sys.path.insert(0, str(ROOT / "bench"))  # benchlib, as bench/mutation/run.py has it

import kernel_text as kt  # noqa: E402
import operators as ops  # noqa: E402
import sources  # noqa: E402

RESULTS = {"passed": 0, "failed": 0}

SAMPLE = r'''// A sample: softmax-like rows with eps and a bias, a vectorised path with a tail.
/* kopt:plan
{
  "tunables": {"BLOCK": [256, 128]},
  "launches": [{"kernel": "rows", "grid": ["rows"], "block": ["BLOCK"], "shared_bytes": "BLOCK*4",
                "args": ["x", "bias", "out", "cols", "eps", "f32:alpha"]}]
}
*/
#define LANES 256

extern "C" __global__ void rows(const float* x, const float* bias, float* out, int cols,
                                float eps, float alpha) {
  extern __shared__ float partial[];
  const float* row = x + (long long)blockIdx.x * cols;  // eps in a comment: never mutated
  float* out_row = out + (long long)blockIdx.x * cols;
  if (cols >= 1 << 30) return;
  float m = -3.4e38f;
  for (int c = threadIdx.x; c < cols; c += BLOCK) m = fmaxf(m, row[c]);
  partial[threadIdx.x] = m;
  __syncthreads();
  for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] = fmaxf(partial[threadIdx.x], partial[threadIdx.x + stride]);
    __syncthreads();
  }
  m = partial[0];
  float sum = 0.0f;
  int quads = cols / 4;
  for (int q = threadIdx.x; q < quads; q += BLOCK) sum += expf(row[4 * q] - m);
  for (int c = quads * 4 + threadIdx.x; c < cols; c += BLOCK) sum += expf(row[c] - m);
  float inv = alpha / (sum + eps);
  for (int c = threadIdx.x; c < LANES; c += BLOCK) out_row[c] = expf(row[c] - m) * inv + bias[c];
}
'''

TASK = {"name": "sample", "sizes": {"rows": 64, "cols": 4096}, "constants": {"alpha": 1.75, "eps": 1e-5},
        "inputs": [{"name": "x"}, {"name": "bias"}], "outputs": [{"name": "out"}],
        "shapes": [{"cols": 7}, {"cols": 1023}], "holdout": [{"cols": 50000}]}


def check(name, fn):
    try:
        fn()
        RESULTS["passed"] += 1
        print("ok     " + name)
    except AssertionError as e:
        RESULTS["failed"] += 1
        print("FAILED " + name + ": " + str(e))


def changed_lines(before, after):
    """(removed lines, added lines) between two texts."""
    diff = kt.unified_diff(before, after, "k.cu").splitlines()
    removed = [l[1:].strip() for l in diff if l.startswith("-") and not l.startswith("---")]
    added = [l[1:].strip() for l in diff if l.startswith("+") and not l.startswith("+++")]
    return removed, added


def mutants_of(name):
    kernel = ops.Kernel(SAMPLE, TASK, "sample.cu")
    made = ops.OPERATORS[name](kernel)
    assert made, "%s made no mutant of the sample" % name
    for site, text in made:
        assert kt.plan(text) == kt.plan(SAMPLE), "%s changed the plan at %s" % (name, site)
        assert kt.balanced(text), "%s unbalanced brackets at %s" % (name, site)
        assert "eps in a comment: never mutated" in text, "%s edited a comment" % name
        assert text != SAMPLE
    return made


def expect_change(name, removed_part, added_part):
    """Some mutant of `name` replaces a line containing removed_part by one containing
    added_part, and changes only that one line (plus an #include where a type needs one)."""
    seen = []
    for site, text in mutants_of(name):
        removed, added = changed_lines(SAMPLE, text)
        added = [a for a in added if not a.startswith("#include")]
        seen.append((removed, added))
        if (len(removed) <= 1 and len(added) <= 1 and any(removed_part in r for r in removed)
                and all(added_part in a for a in added)):
            return
    raise AssertionError("%s: no mutant turns '%s' into '%s'; made: %s" % (
        name, removed_part, added_part, seen[:6]))


def test_operators():
    expect_change("bound_cap", "c < cols; c += BLOCK) m = fmaxf", "c < min(cols, (decltype(cols))50000)")
    expect_change("literal_shift", "#define LANES 256", "#define LANES 255")
    expect_change("literal_shift", "#define LANES 256", "#define LANES 257")
    expect_change("literal_shift", "c < LANES", "c < (LANES + 1)")
    expect_change("narrow_index", "const float* row = x + (long long)", "x + (int)blockIdx.x")
    # An accumulator narrowed: every update of `sum` (and only of `sum`) rounds through fp16.
    narrowed = [changed_lines(SAMPLE, t) for _, t in mutants_of("narrow_accumulator")]
    assert ([l for l in narrowed if l[1] == [
        "#include <cuda_fp16.h>",
        "for (int q = threadIdx.x; q < quads; q += BLOCK) sum = __half2float(__float2half("
        "sum + (expf(row[4 * q] - m))));",
        "for (int c = quads * 4 + threadIdx.x; c < cols; c += BLOCK) sum = __half2float("
        "__float2half(sum + (expf(row[c] - m))));"]]), narrowed
    assert not any("inv" in " ".join(a) for _, a in narrowed), "inv is no accumulator"
    expect_change("drop_term", "float inv = alpha / (sum + eps);", "float inv = alpha / (sum );")
    expect_change("drop_term", "* inv + bias[c];", "* inv ;")
    expect_change("drop_sync", "__syncthreads();", "")
    expect_change("drop_guard", "if (cols >= 1 << 30) return;", "")
    expect_change("drop_guard", "if (threadIdx.x < stride) partial", "partial[threadIdx.x] = fmaxf(")
    expect_change("drop_tail", "for (int c = quads * 4 + threadIdx.x", "")
    expect_change("fold_constant", "float inv = alpha / (sum + eps);", "float inv = 1.75f / (sum + eps);")
    expect_change("fold_constant", "float inv = alpha / (sum + eps);", "alpha / (sum + 1e-05f)")
    expect_change("output_read_first", "out_row[c] = expf", "{ if (!(fabsf((float)(out_row[c])) < 1e30f))")
    expect_change("output_read_first", "out_row[c] = expf", "out_row[c] += expf")
    expect_change("reduction_off_by_one", "stride > 0; stride /= 2", "stride > 1; stride /= 2")
    expect_change("reduction_off_by_one", "c < cols; c += BLOCK) m = fmaxf", "c += (BLOCK + 1)")
    expect_change("reduction_off_by_one", "for (int c = threadIdx.x; c < cols; c += BLOCK) m",
                  "for (int c = threadIdx.x + 1;")
    # The max is zeroed once, just before the first statement that subtracts it: every later
    # exp() sees the same 0, so only the overflow guard is gone.
    made = mutants_of("drop_max_subtraction")
    assert len(made) == 1, made
    removed, added = changed_lines(SAMPLE, made[0][1])
    assert added == ["m = 0.0f; for (int q = threadIdx.x; q < quads; q += BLOCK) sum += "
                     "expf(row[4 * q] - m);"], added
    assert not ops.drop_max_subtraction(ops.Kernel(SAMPLE.replace("- m)", "- 0)"), TASK, "s")), \
        "exp of a literal difference is no max subtraction"


def test_every_operator_tested():
    kernel = ops.Kernel(SAMPLE, TASK, "sample.cu")
    for name, op in ops.OPERATORS.items():
        assert op(kernel), "operator %s makes no mutant of the sample: add a site" % name


def test_code_view_blanks_comments_and_strings():
    text = 'int a; // b < c\n/* x < y */ printf("i < n");\n'
    view = kt.code_view(text)
    assert len(view) == len(text) and view.count("\n") == 2
    assert "<" not in view, view
    assert kt.balanced("f(a[1]) { }") and not kt.balanced("f(a[1) }")


def test_suite_mutants():
    tasks = sources.load_tasks()
    good = sources.good_kernels(tasks)
    assert len([g for g in good if g[0].endswith("baseline.cu")]) == len(tasks)
    assert any(g[0].startswith("tests/sandbox/") for g in good), "no good twin found"
    mutants = sources.mutants(tasks, good)
    ids = [m["id"] for m in mutants]
    assert len(ids) == len(set(ids)), "duplicate mutants"
    assert len(mutants) >= 300, len(mutants)
    assert len({m["task"] for m in mutants}) >= 20
    realworld = {t.name for t in tasks.values() if t.suite == "tasks_realworld"}
    assert len(realworld) == 8 and realworld <= {m["task"] for m in mutants}
    for m in mutants:
        original = dict((p, t) for p, _, t in good)[m["source"]]
        assert kt.plan(m["text"]) == kt.plan(original), "%s changed the plan" % m["id"]
    # equivalent.json: every entry names a generated mutant (a stale id would hide nothing).
    equivalent = sources.load_equivalent(ROOT / "bench" / "mutation" / "equivalent.json")
    stale = set(equivalent) - set(ids)
    assert not stale, "equivalent.json names mutants that are no longer generated: %s" % stale


# The fake compile gate (`kopt eval TASK FILE --compile-only ...`): a narrowed accumulator
# "does not compile", everything else does. A shell script: it runs once per file.
# The fake compiler's "cubin" ignores __syncthreads() (and whitespace): a drop_sync mutant
# compiles to its original's machine code, so the harness calls it equivalent and never judges it.
# `kopt eval TASK FILE --sanitize --no-time --json` (the sanitizer pass over what verification
# passed): a "racecheck finding" in a mutant that rounds through bf16
# (`__bfloat162float(__float2bfloat16(`, narrow_accumulator's rewrite; no original has it), a clean
# pass otherwise.
FAKE_KOPT = r'''#!/bin/sh
if [ "$4" = "--sanitize" ]; then
  if grep -q "__bfloat162float(__float2bfloat16(" "$3"; then
    echo '{"verdict": "sanitizer", "sanitizer": {"ran": true, "note": "fake", "seconds": 0.1, "finding": "racecheck: fake hazard"}}'
  else
    echo '{"verdict": "ok", "sanitizer": {"ran": true, "note": "fake: clean", "seconds": 0.1}}'
  fi
  exit 0
fi
if grep -q "__half\|__nv_bfloat16 sum\|__nv_bfloat16 local" "$3"; then
  echo '{"verdict": "compile_error", "log": "fake"}'
else
  d=$(sed 's/__syncthreads();//g' "$3" | tr -d ' \n' | sha256sum | cut -c1-64)
  mkdir -p "$KOPT_CACHE_DIR/compile/aa"
  echo "{\"cubin_sha256\": \"$d\"}" > "$KOPT_CACHE_DIR/compile/aa/$d.json"
  echo '{"verdict": "compiled", "log": ""}'
fi
'''


def test_sanitize_order_puts_scored_survivors_first():
    import run as harness  # noqa: E402
    items = [{"id": "e", "operator": "drop_sync"}, {"id": "o", "operator": "original"},
             {"id": "s", "operator": "bound_cap"}]
    ordered = sorted(items, key=lambda i: harness.sanitize_order(i, {"e": "a reason"}))
    assert [i["id"] for i in ordered] == ["s", "o", "e"], ordered


def list_mutants(out, *options):
    """`run.py OUT --list OPTIONS`: its lines, the last one the count of mutants and sources."""
    listed = subprocess.run([sys.executable, str(ROOT / "bench" / "mutation" / "run.py"),
                             str(out), "--list", *options],
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    return listed.stdout.splitlines()


def test_survivors_of_selects_an_earlier_runs_survivors():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        ids = [line.split()[0] for line in list_mutants(tmp / "a", "--tasks", "softmax,axpy")[:-1]]
        equivalent = sources.load_equivalent(ROOT / "bench" / "mutation" / "equivalent.json")
        kept = [i for i in ids if i not in equivalent][:3]
        gone = [i for i in ids if i in equivalent][:1]
        assert len(kept) == 3 and gone, (kept, gone)
        earlier = tmp / "mutation.json"
        earlier.write_text(json.dumps({"survivors": [
            {"id": i, "equivalent": None} for i in kept + gone] + [
            {"id": ids[-1], "equivalent": "an old reason"}]}))
        again = list_mutants(tmp / "b", "--survivors-of", str(earlier))
        chosen = [line.split()[0] for line in again[:-1]]
        # The survivors not equivalent then or now, nothing else.
        expected = set(kept) - ({ids[-1]} if ids[-1] in kept else set())
        assert set(chosen) == expected, (chosen, kept, gone)


def test_ids_without_tasks_judge_only_the_originals_they_come_from():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        listed = list_mutants(tmp / "a", "--tasks", "softmax,axpy")
        first = listed[0].split()[0]
        alone = list_mutants(tmp / "b", "--ids", first)
        assert alone[-1].startswith("1 mutants of 1 sources"), alone
        sources_of_tasks = int(listed[-1].split()[3])
        assert sources_of_tasks > 1
        with_tasks = list_mutants(tmp / "c", "--ids", first, "--tasks", "softmax,axpy")
        assert with_tasks[-1].startswith("1 mutants of %d sources" % sources_of_tasks), with_tasks


def test_harness_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        kopt = tmp / "kopt"
        kopt.write_text(FAKE_KOPT)
        kopt.chmod(0o755)
        out = tmp / "out"
        argv = [str(ROOT / "bench" / "run.sh"), "mutation", str(out), "--worker",
                str(ROOT / "tests" / "bench" / "fake_sandbox.py"), "--kopt", str(kopt),
                "--tasks", "softmax,sgemm", "--jobs", "4", "--operators",
                "narrow_accumulator,drop_sync,fold_constant"]
        proc = subprocess.run(argv + ["--limit", "6", "--workers", "2", "--sanitize-jobs", "3"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        first = json.loads((out / "mutation.json").read_text())
        assert first["options"]["workers"] == 2
        judged = {json.loads(line)["id"]: json.loads(line)
                  for line in (out / "mutation-results.jsonl").read_text().splitlines()}
        assert all(r.get("shared") for r in judged.values()), "judged beside another worker"
        # drop_sync mutants compile to their original's machine code: equivalent, never judged.
        same = set(first["equivalent_by_machine_code"])
        sync = first["per_operator"].get("drop_sync", {})
        assert same and sync.get("equivalent") == sync.get("mutants") == len(same), (same, sync)
        assert not same & set(judged), "a mutant with its original's machine code was judged"
        for key in ("mutation_score", "mutants", "killed", "stillborn", "tasks", "per_operator",
                    "per_task", "survivors", "false_rejects", "device", "date", "commit",
                    "per_mutant_wall_ms"):
            assert key in first, key
        # The fake answers ok except for sgemm (compile_error): sgemm's original is a false
        # reject and its mutants are killed; the others survive.
        assert [r["task"] for r in first["false_rejects"]] == ["sgemm"], first["false_rejects"]
        sgemm = first["per_task"].get("sgemm", {})
        assert sgemm.get("killed", 0) == sgemm.get("mutants", 0) - sgemm.get("stillborn", 0)
        assert first["killed"] + first["survived"] + first["stillborn"] + first["unjudged"] + \
            first["equivalent"] == first["generated"]
        assert len(first["survivors"]) == first["survived"] + first["equivalent"] - len(same)
        assert first["stillborn"] >= 1 and first["stillborn"] == len(first["stillborn_list"]) and all(
            s["operator"] == "narrow_accumulator" for s in first["stillborn_list"])
        assert all(s["diff"].startswith("--- a/") for s in first["survivors"])
        # Resumed with a larger limit: only the new mutants are judged.
        proc = subprocess.run(argv + ["--limit", "9"], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        second = json.loads((out / "mutation.json").read_text())
        # Only the new mutants are judged (none of the first run's; a new one may be stillborn).
        new = second["generated"] - first["generated"]
        new_stillborn = second["stillborn"] - first["stillborn"]
        assert new - new_stillborn <= second["cost"]["judged_this_run"] <= new, second["cost"]
        assert proc.stdout.strip().splitlines()[-1].startswith(("- `", "|", "- none")), \
            "table not last: " + proc.stdout.strip().splitlines()[-1]
        # The sanitizer pass: every item verification passed was sanitized once (the resumed run
        # did not repeat the first's); its findings are kills counted apart, never survivors.
        records = {}
        for line in (out / "mutation-results.jsonl").read_text().splitlines():
            records[json.loads(line)["id"]] = json.loads(line)
        passed = [r for r in records.values() if r["verdict"] in ("ok", "sanitizer")]
        assert passed and all("sanitizer" in r for r in passed), passed
        by_sanitizer = [i for i, r in records.items() if r.get("killed_by") == "sanitizer"]
        assert by_sanitizer, "the fake finds a hazard in every bf16-rounded mutant"
        assert second["sanitizer"]["killed"] == len(by_sanitizer), second["sanitizer"]
        assert not set(by_sanitizer) & {s["id"] for s in second["survivors"]}
        assert [r["task"] for r in second["false_rejects"]] == ["sgemm"], second["false_rejects"]
        runs = (out / "mutation-results.jsonl").read_text().count('"sanitizer": {')
        assert runs == len(passed), "each verified item sanitized exactly once"
        check_merge(tmp, out, second)


def check_merge(tmp, out, whole):
    """merge.py: a later partial run's verdict replaces the whole run's for that mutant, and the
    summary names both sources."""
    # A mutant the sanitizer killed in the whole run: a later run judges it ok (survived).
    records = [json.loads(line) for line in (out / "mutation-results.jsonl").read_text().splitlines()]
    survivor = next(r["id"] for r in records if r.get("killed_by") == "sanitizer")
    later = tmp / "later"
    later.mkdir()
    (later / "mutation-results.jsonl").write_text(json.dumps(
        {"id": survivor, "verdict": "ok", "error": None, "wall_ms": 1.0,
         "detail": "judged again by a later run"}) + "\n")
    merged = tmp / "merged"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "mutation" / "merge.py"),
                           str(merged), str(out), str(later)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((merged / "mutation.json").read_text())
    assert summary["killed"] == whole["killed"] - 1, (summary["killed"], whole["killed"])
    assert survivor in {s["id"] for s in summary["survivors"]}
    assert [m["path"] for m in summary["merged_from"]] == [str(out), str(later)]
    assert "Merged from" in (merged / "mutation.md").read_text()
    assert summary["one_commit"] is False, "the later run names no commit"
    # Two shards at one commit (here the same run twice): said so, their costs added.
    shards = tmp / "shards"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "mutation" / "merge.py"),
                           str(shards), str(out), str(out)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((shards / "mutation.json").read_text())
    assert summary["one_commit"] is True
    assert summary["cost"]["judged_this_run"] == 2 * whole["cost"]["judged_this_run"]
    assert "shards of one run" in (shards / "mutation.md").read_text()


def main():
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            check(name, fn)
    print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    sys.exit(1 if RESULTS["failed"] else 0)


if __name__ == "__main__":
    main()
