"""kopt tasks import end to end on a GPU with PyTorch (ctest label gpu; exit 77 = SKIPPED
without them): modules written here imported and validated; a wrong reference refused with the
shape, the element and both values named, and nothing written; unimportable files said why.

  test_import_gpu.py KOPT_BINARY [OUT_DIR]"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def skip_without_gpu():
    try:
        import torch
    except ImportError:
        print("SKIPPED: no PyTorch")
        sys.exit(77)
    if not torch.cuda.is_available():
        print("SKIPPED: no CUDA GPU")
        sys.exit(77)


def kopt(binary, *args):
    p = subprocess.run([binary, "tasks", "import", *args], capture_output=True, text=True,
                       cwd=ROOT)
    print("$ kopt tasks import %s\n%s%s(exit %d)" % (" ".join(args), p.stdout, p.stderr,
                                                     p.returncode))
    return p


def main():
    skip_without_gpu()
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    keep = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
    root = pathlib.Path(tempfile.mkdtemp(prefix="kopt-import-"))
    failures = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    p = kopt(binary, str(HERE / "row_softmax.py"), "--tasks", str(root), "--reference",
             str(HERE / "row_softmax_reference.cu"))
    expect(p.returncode == 0, "row_softmax imported")
    task = json.loads((root / "row_softmax" / "task.json").read_text()) if p.returncode == 0 else {}
    expect(task.get("sizes") == {"rows": 16, "cols": 16384}, "row_softmax sizes rows, cols")
    expect([r["name"] for r in task.get("stress", [])] == ["std 40", "mean 1000"],
           "row_softmax stress rounds std 40, mean 1000")
    expect(task.get("production_baselines") == ["torch_eager", "torch_compile"],
           "row_softmax declares its module's eager and compiled times as production baselines")
    for f in ("reference.cu", "baseline.cu", "torch_op.py", "module.py"):
        expect((root / "row_softmax" / f).exists(), "row_softmax/%s written" % f)

    p = kopt(binary, str(HERE / "row_softmax.py"), "--tasks", str(root), "--name", "wrong",
             "--reference", str(HERE / "row_softmax_wrong_reference.cu"))
    expect(p.returncode == 1, "a wrong reference is refused")
    expect("reference.cu disagrees with the PyTorch module at shape" in p.stderr
           and "out[" in p.stderr and "from the reference" in p.stderr,
           "the refusal names the shape, the element and both values")
    expect(not (root / "wrong").exists() and not (root / ".import-wrong").exists(),
           "nothing written for the wrong reference")

    p = kopt(binary, str(HERE / "linear_relu.py"), "--tasks", str(root), "--reference",
             str(HERE / "linear_relu_reference.cu"))
    expect(p.returncode == 0, "linear_relu imported (parameters as inputs)")

    p = kopt(binary, "--kernelbench", str(HERE / "random_forward.py"),
             str(HERE / "scalar_input.py"), "--tasks", str(root))
    expect(p.returncode == 1 and "forward is random" in p.stdout
           and "input 1 is int, not a tensor" in p.stdout, "unimportable files said why")

    check = subprocess.run([binary, "tasks", "check", "--tasks", str(root)], capture_output=True,
                           text=True, cwd=ROOT)
    print(check.stdout + check.stderr)
    expect(check.returncode == 0, "kopt tasks check passes the imported tasks on the GPU")
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
        for d in root.iterdir():
            if d.is_dir():
                shutil.copytree(d, keep / d.name, dirs_exist_ok=True)
    shutil.rmtree(root, ignore_errors=True)
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
