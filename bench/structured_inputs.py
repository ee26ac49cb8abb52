"""Structured inputs (task.json's init keys of issue 33; sandbox/structured_init.h) drawn in
PyTorch, for the helpers that draw a task's inputs outside the worker (torch baselines, the
reference's validation against PyTorch): block tables ("pages"), permutations, edge values,
NaN in stale KV slots, hot/cold routing columns, runs (`repeat`) and sorted rows (`sorted`), with the worker's semantics (its random
numbers differ: only the structure matters).

  make(torch, spec, init, shape, sizes, made, gen, evaluate) -> tensor or None (not structured)
  finish(torch, spec, init, tensor, sizes, made, gen, evaluate) -> tensor (planted values)"""


def _perm(torch, n, gen, device):
    return torch.randperm(n, generator=gen, device=device)


def make(torch, spec, init, shape, sizes, made, gen, evaluate):
    dist = init.get("dist")
    device = gen.device
    if dist == "permutation":
        row = shape[-1] if shape else 1
        rows = 1
        for s in shape[:-1]:
            rows *= s
        divide = evaluate(init.get("divide", 1), sizes)
        if not init.get("shuffle", True):
            out = torch.arange(row, device=device).repeat(rows, 1)
        elif rows:
            out = torch.stack([_perm(torch, row, gen, device) for _ in range(rows)])
        else:
            out = torch.zeros((0, row), dtype=torch.int64, device=device)
        return (out // divide).reshape(shape)
    if dist == "pages":
        page, pool = evaluate(init["page"], sizes), evaluate(init["pool"], sizes)
        width = shape[-1]
        lens = made[init["lengths"]].long().flatten().tolist()
        table = torch.full((len(lens), width), -1, dtype=torch.int64)
        order, nxt = [], 0
        used = set()
        for r, n in enumerate(lens):
            for j in range((max(n, 0) + page - 1) // page):
                if nxt == len(order):
                    order, nxt = _perm(torch, pool, gen, device).tolist(), 0
                table[r, j] = order[nxt]
                used.add(order[nxt])
                nxt += 1
        pad = init.get("pad", "unused")
        if pad == "unused":
            unused = [p for p in range(pool) if p not in used] or list(range(pool))
            free = table < 0
            picks = torch.randint(0, len(unused), (int(free.sum()),), generator=gen, device=device)
            table[free] = torch.tensor(unused, dtype=torch.int64)[picks.cpu()]
        else:
            table[table < 0] = int(pad)
        return table.reshape(shape).to(device)
    return None


def finish(torch, spec, init, tensor, sizes, made, gen, evaluate):
    device = tensor.device
    if init.get("repeat"):  # runs of `repeat` consecutive elements share one value
        run = max(1, evaluate(init["repeat"], sizes))
        flat = tensor.flatten()
        tensor = flat[torch.arange(flat.numel(), device=device) // run * run].reshape(tensor.shape)
    if init.get("sorted"):  # monotone rows (the worker draws quantiles; the order is what matters)
        row = max(1, evaluate(init.get("row", tensor.shape[-1] if tensor.dim() else 1), sizes))
        rows = tensor.reshape(-1, row).sort(dim=1, descending=init["sorted"] == "descending")
        tensor = rows.values.reshape(tensor.shape)
    if init.get("edges"):
        low, high = evaluate(init["low"], sizes), evaluate(init["high"], sizes)
        values = []
        for e in init["edges"]:
            v = evaluate(e, sizes)
            if low <= v < high and v not in values:
                values.append(v)
        flat = tensor.flatten()
        order = torch.randperm(flat.numel(), generator=gen, device=device)[:min(len(values),
                                                                                  flat.numel() // 2)]
        vals = torch.tensor(values, device=device)[torch.randperm(len(values), generator=gen,
                                                                   device=device)]
        flat[order] = vals[:order.numel()].to(flat.dtype)
        tensor = flat.reshape(tensor.shape)
    stale = init.get("stale")
    if stale:
        page, slot = evaluate(stale["page"], sizes), evaluate(stale["slot"], sizes)
        table = made[stale["table"]].long()
        lens = made[stale["lengths"]].long().flatten()
        width = table.shape[-1]
        table = table.reshape(-1, width)
        slots = tensor.numel() // slot
        pos = torch.arange(width * page, device=device)
        owned = pos[None, :] < lens[:, None]
        ids = table[:, pos // page] * page + pos % page  # [rows, width * page]
        read = torch.zeros(slots, dtype=torch.bool, device=device)
        read[ids[owned]] = True
        view = tensor.reshape(slots, slot)
        view[~read] = float("nan")
        tensor = view.reshape(tensor.shape)
    routing = init.get("routing")
    if routing:
        experts = evaluate(routing["experts"], sizes)
        hot, cold = evaluate(routing.get("hot", 0), sizes), evaluate(routing.get("cold", 0), sizes)
        if hot + cold:
            rows = tensor.reshape(-1, experts).float()
            cols = torch.randperm(experts, generator=gen, device=device)
            role = torch.zeros(experts, dtype=torch.int64, device=device)
            role[cols[:hot]] = 1
            role[cols[hot:hot + cold]] = -1
            plain = rows[:, role == 0]
            lo = plain.min(dim=1, keepdim=True).values if plain.numel() else rows.min(1, True).values
            hi = plain.max(dim=1, keepdim=True).values if plain.numel() else rows.max(1, True).values
            span = (hi - lo).clamp(min=1.0)
            u = torch.rand(rows.shape, generator=gen, device=device)
            step = span * (0.05 + 0.25 * u) + 1e-3 * span
            rows = torch.where(role[None, :] == 1, hi + step, rows)
            rows = torch.where(role[None, :] == -1, lo - step, rows)
            tensor = rows.to(tensor.dtype).reshape(tensor.shape)
    return tensor
