#!/usr/bin/env python3
"""The GPU benchmarks' plumbing without a GPU: each script drives tests/bench/fake_sandbox.py
(a protocol v2 stand-in) with its torch parts switched off, and must write NAME.json and NAME.md
and print the table last. The numbers are the fake's; only the shape of the output is checked.
Run by ctest; prints 'N passed, N failed'."""
import json
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "bench" / "fake_sandbox.py"
RESULTS = {"passed": 0, "failed": 0}


def run(bench, out, *args):
    argv = [str(ROOT / "bench" / "run.sh"), bench, str(out), "--worker", str(FAKE)] + list(args)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, "%s exited %d: %s" % (bench, proc.returncode, proc.stderr[-2000:])
    result = json.loads((out / (bench + ".json")).read_text())
    table = (out / (bench + ".md")).read_text().strip()
    last_lines = proc.stdout.strip().splitlines()[-3:]
    assert table.splitlines()[-1] == last_lines[-1], "the table is not printed last"
    assert (out / (bench + ".env.txt")).exists()
    return result, table


def check(name, fn):
    try:
        fn()
        RESULTS["passed"] += 1
        print("ok     " + name)
    except AssertionError as e:
        RESULTS["failed"] += 1
        print("FAILED " + name + ": " + str(e))


def test_throughput():
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        result, table = run("throughput", out, "--no-inline", "--tasks", "axpy,sgemm,softmax",
                            "--variants", "1")
        assert result["candidates"] == 6, result["candidates"]
        assert result["verdicts"] == {"compile_error": 2, "ok": 4}, result["verdicts"]
        assert result["per_candidate"]["compile_ms"]["n"] == 6
        assert result["per_candidate"]["verify_ms"]["n"] == 4  # verified candidates only
        assert result["candidates_per_gpu_hour"] > 0
        assert "| compile | 25.0 | 30.0 |" in table, table
        assert "skipped (--no-inline)" in table


def test_mix():
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        result, table = run("mix", out, "--tasks", "axpy,softmax", "--count", "100")
        assert result["candidates"] == 100, result["candidates"]
        classes = result["by_class"]
        assert set(classes) == {"correct", "incorrect", "compile_error", "crash", "out_of_bounds",
                                "hang_edge_shape", "hang_every_shape"}, classes
        assert classes["hang_every_shape"]["verdicts"] == {"timeout": classes["hang_every_shape"]["n"]}
        assert classes["correct"]["verdicts"] == {"ok": classes["correct"]["n"]}
        # Every hang and crash restarted the worker, as the real one exits after a fatal answer.
        fatal = sum(classes[k]["n"] for k in ("crash", "hang_edge_shape", "hang_every_shape"))
        assert result["worker_restarts"] == fatal, (result["worker_restarts"], fatal)
        assert result["candidates_per_gpu_hour"] > 0
        assert table.splitlines()[-1].startswith("| hang_every_shape |"), table


def test_fidelity():
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        result, table = run("fidelity", out, "--no-python", "--repeats", "3")
        names = [c["case"] for c in result["cases"]]
        assert len(names) == 4 and names[1].startswith("copy, small"), names
        small = result["cases"][1]
        assert small["sizes"]["n"] == 1 << 20
        assert len(small["kopt_runs"]) == 3 and small["kopt_spread"] == 0
        # The fake's time grows with the size: the override reached the worker.
        assert small["kopt_median_us"] < result["cases"][0]["kopt_median_us"]
        assert "| reduction: softmax 4096x32768 |" in table


def test_quality_with_a_database():
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        db = sqlite3.connect(str(out / "memory.db"))
        db.executescript("""
            CREATE TABLE tasks(id INTEGER PRIMARY KEY, name TEXT);
            CREATE TABLE kernels(id INTEGER PRIMARY KEY, source TEXT, origin_tuner INTEGER,
                                 origin_agent TEXT, origin_model TEXT);
            CREATE TABLE evaluations(id INTEGER PRIMARY KEY, kernel_id INTEGER, task_id INTEGER,
                                     verdict TEXT, median_us REAL, speedup REAL,
                                     tunables_json TEXT, gpu_model TEXT);
            INSERT INTO tasks VALUES (1, 'axpy');
            INSERT INTO kernels VALUES (1, '// baseline', 0, 'baseline', ''),
                                       (2, '// tuned', 1, 'tuner', ''),
                                       (3, '// llm', 0, 'coder', 'model-x');
            INSERT INTO evaluations VALUES (1, 1, 1, 'ok', 10, 1.0, '{}', 'Fake GPU'),
                                           (2, 2, 1, 'ok', 8, 1.25, '{"BLOCK": 512}', 'Fake GPU'),
                                           (3, 3, 1, 'ok', 5, 2.0, '{}', 'Fake GPU'),
                                           (4, 3, 1, 'incorrect', 0, 0, '{}', 'Fake GPU');""")
        db.commit()
        db.close()
        result, table = run("quality", out, "--no-torch", "--tasks", "axpy,sgemm",
                            "--db", str(out / "memory.db"))
        axpy, sgemm = result["tasks"]
        assert axpy["tuner"]["tunables"] == {"BLOCK": 512}, axpy
        assert axpy["llm"]["origin"] == "model-x", axpy
        assert axpy["best_from"] in ("tuner", "llm") and axpy["best_speedup"] == 1.25
        assert axpy["baseline_sol_percent"] == 50.0
        assert "error" in sgemm
        assert "| axpy |" in table and "| sgemm | failed:" in table, table


def test_multi_gpu():
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d)
        result, table = run("multi_gpu", out, "--gpus", "2", "--seconds", "1",
                            "--tasks", "axpy,softmax")
        one, two = result["phases"]
        assert one["gpus"] == 1 and two["gpus"] == 2
        assert set(two["per_gpu"]) == {"0", "1"} and min(two["per_gpu"].values()) > 0, two
        assert one["candidates"] > 0 and one["errors"] == 0
        assert table.splitlines()[-1].startswith("| 2 |"), table


def test_run_sh_refuses_unknown_benchmarks():
    proc = subprocess.run([str(ROOT / "bench" / "run.sh"), "nope", "/tmp/x"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "no benchmark 'nope'" in proc.stderr, proc.stderr


for test in (test_throughput, test_mix, test_fidelity, test_quality_with_a_database, test_multi_gpu,
             test_run_sh_refuses_unknown_benchmarks):
    check(test.__name__, test)
print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
sys.exit(1 if RESULTS["failed"] else 0)
