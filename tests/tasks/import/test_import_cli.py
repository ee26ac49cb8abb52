"""kopt tasks import's refusals, without PyTorch or a GPU (ctest task_import_cli):
no --reference and no coder model configured; PyTorch missing (a python3 without site-packages);
a bad task name; a task folder that exists. Each a clear message and a non-zero exit, and nothing
left in the suite.

  test_import_cli.py KOPT_BINARY"""
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent


def main():
    binary = str(pathlib.Path(sys.argv[1]).resolve())
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kopt-import-cli-"))
    tasks = tmp / "tasks"
    tasks.mkdir()
    env = dict(os.environ, KOPT_HOME=str(tmp / "home"), KOPT_CACHE_DIR=str(tmp / "cache"))
    env.pop("KOPT_CONFIG", None)
    no_torch = tmp / "python-without-site"
    no_torch.write_text("#!/bin/sh\nexec %s -S \"$@\"\n" % sys.executable)
    no_torch.chmod(0o755)
    failures = []

    def run(*args, **extra):
        p = subprocess.run([binary, "tasks", "import", *args, "--tasks", str(tasks)],
                           capture_output=True, text=True, env=dict(env, **extra))
        print("$ kopt tasks import %s\n%s%s(exit %d)" % (" ".join(args), p.stdout, p.stderr,
                                                         p.returncode))
        return p

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            failures.append(what)

    module = str(HERE / "row_softmax.py")
    p = run(module)
    expect(p.returncode == 2 and "no coder model is configured" in p.stderr
           and "--reference" in p.stderr, "no reference and no LLM: refused, asking for --reference")
    p = run(module, "--reference", str(HERE / "row_softmax_reference.cu"),
            KOPT_PYTHON=str(no_torch))
    expect(p.returncode == 3 and "PyTorch is missing" in p.stderr, "no PyTorch: said, exit 3")
    p = run(module, "--name", "Bad Name", "--reference", str(HERE / "row_softmax_reference.cu"))
    expect(p.returncode == 2 and "lower-case" in p.stderr, "a bad task name is refused")
    (tasks / "row_softmax").mkdir()
    p = run(module, "--reference", str(HERE / "row_softmax_reference.cu"))
    expect(p.returncode == 2 and "exists" in p.stderr, "an existing folder is never replaced")
    (tasks / "row_softmax").rmdir()
    expect(sorted(x.name for x in tasks.iterdir()) == [], "nothing left in the suite")
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
