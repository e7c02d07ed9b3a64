"""real_layout_official and real_layout_official_random: the TpuGraphs paper protocol; train one
graph, score unet_3d.4x4.bf16 on the 1000 rows of the official eval indices, with the checkpoint
chosen on configs of that graph that are not scored and duplicate no scored row."""

import json
import os
import shutil

from ..common import REPO, BenchError, log
from ..npz import npz_rows, read_npz, take_rows, write_npz
from ..settings import SIZES


def run(bench, case, search):
    """search: "default" (real_layout_official) or "random" (real_layout_official_random)."""
    size = SIZES[bench.mode][case]
    base = bench.case_dir(case)
    bench.cur_dir = base
    npz = os.path.join(bench.shared, "tpugraphs_npz", "npz", "layout", "xla", search)
    train_name = "unet3d" if search == "default" else "openai_v0_rnn_optimized"
    valid_name = "unet_3d.4x4.bf16"
    idx_file = os.path.join(bench.shared, "tpugraphs_npz", "eval_indices", f"xla_{search}.json")
    with open(idx_file) as f:
        indices = json.load(f)[valid_name]
    # Checkpoint selection must not see the scored configs: training evaluates (and keeps its
    # best checkpoint on) the same graph's default-search configs that are not scored and
    # duplicate no scored row; the scored rows live in a second root that only the final
    # evaluation reads.
    root = os.path.join(base, "data")  # train graph + selection configs (the run's valid split)
    # the listed rows, scored by model, hwmodel and random
    scored_root = os.path.join(base, "scored")
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(scored_root, ignore_errors=True)
    coll_dir = os.path.join(root, "npz", "layout", "xla", search)
    scored_dir = os.path.join(scored_root, "npz", "layout", "xla", search)
    os.makedirs(os.path.join(coll_dir, "train"))
    shutil.copyfile(
        os.path.join(npz, "train", train_name + ".npz"),
        os.path.join(coll_dir, "train", train_name + ".npz"),
    )
    m = read_npz(os.path.join(npz, "valid", valid_name + ".npz"))
    mem = dict(m)
    mem["node_config_feat"] = take_rows(m["node_config_feat"], indices, valid_name)
    mem["config_runtime"] = take_rows(m["config_runtime"], indices, valid_name)
    write_npz(os.path.join(scored_dir, "valid", valid_name + ".npz"), mem)
    sel_src = os.path.join(
        bench.shared,
        "tpugraphs_npz",
        "npz",
        "layout",
        "xla",
        "default",
        "valid",
        valid_name + ".npz",
    )
    sm = m if search == "default" else read_npz(sel_src)
    scored_rows = set(npz_rows(mem["node_config_feat"]))
    listed = set(indices) if search == "default" else set()
    sel_rows = [
        i
        for i, r in enumerate(npz_rows(sm["node_config_feat"]))
        if i not in listed and r not in scored_rows
    ]
    if len(sel_rows) < 2:
        raise BenchError(f"case {case}: fewer than 2 selection configs outside the scored ones")
    smem = dict(sm)
    smem["node_config_feat"] = take_rows(sm["node_config_feat"], sel_rows, valid_name)
    smem["config_runtime"] = take_rows(sm["config_runtime"], sel_rows, valid_name)
    write_npz(os.path.join(coll_dir, "valid", valid_name + ".npz"), smem)
    coll = f"layout:xla:{search}"
    config = "configs/xla_fixture_layout.toml"
    overrides = [
        f"data.root={root}",
        "data.ingest=[]",
        'data.holdout="graphs"',
        f'data.collections=["{coll}"]',
        f"train.steps={size['steps']}",
        f"train.eval_every={size['eval_every']}",
    ]

    def job(vname, extra, seed):
        ctx = f"case {case} {vname} seed {seed}"
        run_dir = os.path.join(base, "runs", f"{vname}_seed{seed}")
        info, _ = bench.train(case, vname, seed, config, overrides + extra, run_dir, ctx)
        res = {}
        for which in ("best", "last"):
            res[which] = bench.r.evaluate(
                os.path.join(run_dir, f"{which}.ckpt.h5"),
                "valid",
                os.path.join(run_dir, f"eval_scored_{which}.json"),
                f"{ctx} evaluate {which} on the scored configs",
                data=scored_root,
            )[1]
        info.update(seed=seed, run_dir=run_dir)
        return {"metrics": res["best"], "metrics_last": res["last"], "run": info}

    log(
        f"{case}: training {len(bench.variants())} x {len(bench.seeds)} runs, "
        f"{size['steps']} steps each"
    )
    rows = bench.model_rows(case, job)
    res = bench.assemble(case, rows)
    ctx = f"case {case}"

    def official_ensemble(vname):
        sub = os.path.join(base, f"ensemble_{vname}.csv")
        bench.predict_ensemble(
            [os.path.join(base, "runs", f"{vname}_seed{s}", "best.ckpt.h5") for s in bench.seeds],
            scored_root,
            "valid",
            sub,
            f"{ctx} {vname} ensemble",
        )
        return bench.r.leaderboard(scored_dir, "valid", sub, f"{ctx} {vname} ensemble")

    bench.add_ensembles(res, official_ensemble)
    _, hw = bench.hwmodel(scored_root, "valid", scored_dir, ctx)
    rnd = bench.random_baseline(scored_root, "valid", scored_dir, ctx)
    res["hwmodel"] = {"metrics": hw}
    res["random"] = bench.baseline_summary(rnd)
    res["ceiling"] = None
    res["settings"] = {
        "config": config,
        "overrides": overrides,
        "train_graph": f"{search}/train/{train_name}.npz",
        "scored_graph": f"{search}/valid/{valid_name}.npz",
        "indices": os.path.relpath(idx_file, REPO),
        "num_indices": len(indices),
        "distinct_indices": len(set(indices)),
        "scoring": "the listed rows (repeats kept) written as one npz; model, hwmodel and "
        "random score that file",
        "selection_graph": f"default/valid/{valid_name}.npz",
        "num_selection_configs": len(sel_rows),
        "checkpoint": "best, selected on the selection configs (the same graph's "
        "default-search configs outside the scored indices whose rows duplicate no scored "
        "row); "
        "metrics_last = last",
    }
    return bench.finish_case(case, res)
