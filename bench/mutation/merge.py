#!/usr/bin/env python3
"""Merges the verdicts of several mutation runs into one summary, later runs first to last.

    python3 bench/mutation/merge.py OUT_DIR FIRST_RUN_DIR [LATER_RESULTS ...]

FIRST_RUN_DIR is a whole run (its mutation.json, mutation-compile.json and results); each later
item is a run folder or a mutation-results.jsonl of a partial run (--survivors-of, --tasks). A
later verdict replaces an earlier one for the same mutant (read_done keeps the last), so the
merge is the gate as the latest runs judged it, where they judged. OUT_DIR's mutation.json says
so: its device, date and commit are those of the first run, and `merged_from` lists every
source with its own device, date and commit. Runs at different commits are an account of separate
runs, not one run at one commit: the README says which it quotes. Where every source names the
same commit (`one_commit`: shards of one run, split by --tasks across GPUs or calls), the costs
add up and the summary says so.
"""
import json
import pathlib
import shutil
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = "mutation-results.jsonl"


def source_info(path):
    """(results file, {path, device, date, commit}) of a run folder or a results file."""
    path = pathlib.Path(path)
    folder = path if path.is_dir() else path.parent
    results = path / RESULTS if path.is_dir() else path
    info = {"path": str(path)}
    summary = folder / "mutation.json"
    env = folder.parent / "env.txt"
    if summary.exists():
        s = json.loads(summary.read_text())
        info.update(device=s.get("device"), date=s.get("date"), commit=s.get("commit"))
    elif env.exists():  # a device call's folder (docs/gpu-runs/...): its env.txt
        lines = env.read_text().splitlines()
        info.update(date=lines[0] if lines else None,
                    device=lines[1] if len(lines) > 1 else None,
                    commit=next((l.split()[1] for l in lines if l.startswith("commit ")), None))
    return results, info


def shard_costs(items):
    """The summed `cost` of the run folders among `items` (shards of one run at one commit)."""
    total = {}
    for item in items:
        summary = pathlib.Path(item) / "mutation.json"
        if summary.exists():
            for key, value in json.loads(summary.read_text()).get("cost", {}).items():
                total[key] = round(total.get(key, 0) + value, 1)
    return total


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    first = pathlib.Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(first / "mutation.json", out / "mutation.json")
    compiled = {}  # every source's compile gate verdicts, later ones last
    for item in sys.argv[2:]:
        folder = pathlib.Path(item) if pathlib.Path(item).is_dir() else pathlib.Path(item).parent
        if (folder / "mutation-compile.json").exists():
            compiled.update(json.loads((folder / "mutation-compile.json").read_text()))
    (out / "mutation-compile.json").write_text(json.dumps(compiled, indent=1, sort_keys=True) + "\n")
    merged_from = []
    with open(out / RESULTS, "w") as sink:
        for item in sys.argv[2:]:
            results, info = source_info(item)
            sink.write(results.read_text())
            merged_from.append(info)
    subprocess.run([sys.executable, str(HERE / "run.py"), str(out), "--resummarize"], check=True,
                   stdout=subprocess.DEVNULL)
    summary = json.loads((out / "mutation.json").read_text())
    summary["merged_from"] = merged_from
    commits = {m.get("commit") for m in merged_from}
    summary["one_commit"] = len(commits) == 1 and None not in commits
    if summary["one_commit"]:  # shards of one run: their costs add up
        summary["cost"] = shard_costs(sys.argv[2:])
    summary["score_definition"] = (summary.get("score_definition", "") +
                                   " Merged: each mutant's latest verdict among merged_from.")
    (out / "mutation.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    md = (out / "mutation.md").read_text().splitlines()
    how = ("shards of one run, all at commit %s" % next(iter(commits)) if summary["one_commit"]
           else "a later verdict replaces an earlier one; not one run at one commit")
    note = ["", "Merged from (%s):" % how, ""] + ["- %s: %s, %s, commit %s" % (m["path"], m.get("device"), m.get("date"),
                                                 m.get("commit")) for m in merged_from]
    (out / "mutation.md").write_text("\n".join(md[:3] + note + md[3:]) + "\n")
    print("%s: %.4f (%d killed, %d survived)" % (out, summary["mutation_score"], summary["killed"],
                                                  summary["survived"]))


if __name__ == "__main__":
    main()
