"""Times each task's torch_op.py (PyTorch's own op: the production baseline where one exists) at
the task's default shape, eagerly, with CUDA events (median of 20 after 3 warm-ups), on inputs
drawn as task.json says. Prints one line per task: name, time, and the SOL time from flops/bytes.

  time_torch_ops.py TASKS_DIR [TASK...]"""
import importlib.util
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))

from taskimport.sweep import evaluate  # noqa: E402
from taskimport.validate import make_inputs  # noqa: E402

PEAKS = {"fp32": 67e12, "bf16_tensor": 989e12, "fp16_tensor": 989e12, "tf32_tensor": 494e12,
         "fp8_tensor": 1979e12}
DRAM = 3.35e12  # H100 SXM datasheet bandwidth (the suite's README uses the measured 2.96e12)


def main():
    import torch
    root = pathlib.Path(sys.argv[1])
    names = sys.argv[2:] or sorted(p.name for p in root.iterdir() if (p / "torch_op.py").exists())
    for name in names:
        task = json.loads((root / name / "task.json").read_text())
        spec = importlib.util.spec_from_file_location("op_" + name, root / name / "torch_op.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sizes = task["sizes"]
        inputs = make_inputs(torch, task, sizes, {}, 7)
        fn, args = mod.build(torch, inputs, sizes, task.get("constants", {}))
        with torch.no_grad():
            for _ in range(3):
                fn(*args)
            times = []
            for _ in range(20):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn(*args)
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) * 1e3)
        times.sort()
        sol = max(evaluate(task["flops"], sizes) / PEAKS[task.get("peak", "fp32")],
                  evaluate(task["bytes"], sizes) / DRAM) * 1e6
        print("%-24s eager %10.1f us   SOL %8.1f us   (%s)" % (name, times[10], sol,
              " ".join("%s=%s" % kv for kv in sizes.items())))
        del inputs, args
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
