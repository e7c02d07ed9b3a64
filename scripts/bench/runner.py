"""Running segrank: every command logged to <work>/commands.log and its output to <work>/logs/,
a failure raised as a BenchError naming the context, the command and the tail of its stderr, and
--resume's stamp files (binary sha256, arguments, config file content) beside each run."""

import hashlib
import json
import os
import shlex
import subprocess
import threading
import time

from .common import REPO, BenchError, sha256
from .settings import SYNTH_SEED
from .submission import read_scores


def train_args(config, overrides, run_dir, seed, threads):
    """The arguments of `segrank train` of one run: the config file, the overrides, then run_dir,
    train.seed = sampling.seed = seed, no progress bar and `threads` OpenMP threads. A key given
    more than once (a case's override, then --set, then an --ablate row) keeps its last value,
    passed once: `segrank train` refuses a key set twice."""
    args = ["train", "--config", config, "--overwrite"]
    last = {}
    for kv in list(overrides) + [
        f"train.run_dir={run_dir}",
        f"train.seed={seed}",
        f"sampling.seed={seed}",
        "train.progress=false",
        f"train.threads={threads}",
    ]:
        key = kv.split("=", 1)[0].strip()
        last.pop(key, None)  # re-inserted: the key keeps the position of its last setting
        last[key] = kv
    for kv in last.values():
        args += ["--set", kv]
    return args


class Runner:
    """Runs the segrank binary for the cases (thread-safe: cases run commands from a job pool).
    After a failure `cancelled` is set and every later run() raises at once."""

    def __init__(self, segrank, work, threads, env, resume=False):
        self.resume = resume
        self.segrank_sha = sha256(segrank)
        self.segrank = segrank
        self.work = work
        self.threads = threads
        self.env = env
        self.lock = threading.Lock()
        self.log_path = os.path.join(work, "commands.log")
        self.cancelled = threading.Event()

    def stamp_of(self, args):
        """Binary, arguments and the content of config files among them."""
        text = self.segrank_sha + "\0" + shlex.join(str(a) for a in args)
        for a in args:
            path = os.path.join(REPO, str(a)) if not os.path.isabs(str(a)) else str(a)
            if str(a).endswith(".toml") and os.path.isfile(path):
                text += "\0" + sha256(path)
        return hashlib.sha256(text.encode()).hexdigest()

    def run_stamped(self, args, ctx, stamp_file, outputs, log_name=None):
        """run(), but with --resume a command whose stamp file records the same binary and arguments
        (and whose outputs exist) is not run again: segrank runs are deterministic."""
        stamp = self.stamp_of(args)
        if self.resume and all(os.path.exists(o) for o in outputs):
            try:
                with open(stamp_file) as f:
                    rec = json.load(f)
                if rec.get("stamp") == stamp:
                    return rec.get("wall_s"), True
            except (OSError, ValueError):
                pass
        if os.path.exists(stamp_file):
            os.remove(stamp_file)
        _, wall = self.run(args, ctx, log_name=log_name)
        with open(stamp_file, "w") as f:
            json.dump(
                {
                    "stamp": stamp,
                    "wall_s": round(wall, 2),
                    "command": shlex.join(str(a) for a in args),
                },
                f,
            )
        return wall, False

    def run(self, args, ctx, log_name=None, cwd=REPO):
        """Runs `segrank args` in `cwd`; returns (CompletedProcess with text stdout / stderr, wall
        seconds). With log_name the command, exit code and both streams go to logs/log_name.
        Raises BenchError (ctx, command, exit code, stderr tail) when it fails or cannot start."""
        if self.cancelled.is_set():
            raise BenchError(f"{ctx}: cancelled after an earlier failure")
        cmd = [self.segrank] + [str(a) for a in args]
        text = shlex.join(cmd)
        with self.lock:
            with open(self.log_path, "a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} [{ctx}] {text}\n")
        t0 = time.monotonic()
        try:
            p = subprocess.run(
                cmd,
                cwd=cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                errors="replace",
            )
        except OSError as e:
            raise BenchError(f"{ctx}: cannot run {text}: {e}")
        wall = time.monotonic() - t0
        if log_name:
            with open(os.path.join(self.work, "logs", log_name), "w") as f:
                f.write(
                    f"$ {text}\n# exit {p.returncode}, {wall:.1f} s\n--- stdout\n{p.stdout}"
                    f"--- stderr\n{p.stderr}"
                )
        if p.returncode != 0:
            tail = "\n".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-15:])
            raise BenchError(
                f"{ctx}: segrank failed (exit {p.returncode}) after {wall:.1f} s\n"
                f"  command: {text}\n  stderr (last lines):\n    " + tail.replace("\n", "\n    ")
            )
        return p, wall

    # --- wrappers
    def synth(self, out, collection, size, noise, ctx, layout_choices=0, extra=()):
        """`segrank synth` of one collection into `out` with a SIZES entry's graphs, nodes, configs
        and splits, seed SYNTH_SEED and the given noise."""
        extra = (["--layout-choices", layout_choices] if layout_choices else []) + list(extra)
        self.run(
            [
                "synth",
                "--out",
                out,
                "--collections",
                collection,
                "--graphs",
                size["graphs"],
                "--nodes",
                size["nodes"],
                "--configs",
                size["configs"],
                "--seed",
                SYNTH_SEED,
                "--noise",
                noise,
                "--splits",
                size["splits"],
                "--force",
                "-q",
            ]
            + extra,
            ctx,
        )

    def predict_scores(self, ckpt, split, out, scores, ctx, data=None):
        """`segrank predict --scores` of one checkpoint on a split (of `data`, default the
        checkpoint's data root): the submission to `out`, the scores to `scores`; returns them as
        read_scores does ({graph id: [score per config]})."""
        args = ["predict", "--checkpoint", ckpt, "--split", split]
        if data is not None:
            args += ["--data", data]
        args += ["--out", out, "--scores", scores, "--threads", self.threads]
        self.run(args, ctx)
        return read_scores(scores)

    def leaderboard(self, coll_dir, split, submission, ctx):
        """Leaderboard metrics of one submission against the graphs of coll_dir/split."""
        truth = os.path.join(coll_dir, split)
        p, _ = self.run(
            [
                "leaderboard",
                "--truth",
                truth,
                "--split",
                split,
                "--missing",
                "error",
                "--json",
                submission,
            ],
            ctx,
        )
        try:
            doc = json.loads(p.stdout)
            entry = doc["entries"][0]
        except (ValueError, KeyError, IndexError) as e:
            raise BenchError(
                f"{ctx}: cannot parse `segrank leaderboard --json` output ({e}): {p.stdout[:300]}"
            )
        if not entry.get("valid", False):
            issues = "; ".join(i.get("message", "") for i in entry.get("issues", [])[:5])
            raise BenchError(f"{ctx}: leaderboard rejected {submission}: {issues}")
        if len(entry["collections"]) != 1:
            raise BenchError(
                f"{ctx}: expected one collection in the truth '{truth}', got "
                f"{[c['collection'] for c in entry['collections']]}"
            )
        return collection_metrics(entry["collections"][0])

    def evaluate(self, ckpt, where, json_out, ctx, data=None):
        """`segrank evaluate --json` of a checkpoint on a split ("heldout": --heldout), stamped
        for --resume; returns (per-graph list of the JSON, collection_metrics of its one
        collection)."""
        args = ["evaluate", "--checkpoint", ckpt, "--json", json_out, "--threads", self.threads]
        args += ["--heldout"] if where == "heldout" else ["--split", where]
        if data is not None:
            args += ["--data", data]
        self.run_stamped(args, ctx, json_out + ".stamp", [json_out])
        with open(json_out) as f:
            doc = json.load(f)
        colls = doc["metrics"]["collections"]
        if len(colls) != 1:
            raise BenchError(f"{ctx}: expected one collection in {json_out}")
        return doc["graphs"], collection_metrics(colls[0])


def collection_metrics(c):
    """The metrics of one collection of segrank's JSON (evaluate, leaderboard, report.json) under
    this benchmark's names; a missing or null value is NaN."""

    def num(v):
        return float("nan") if v is None else float(v)

    return {
        "kendall": num(c.get("kendall_tau")),
        "opa": num(c.get("opa")),
        "slowdown_1": num(c.get("slowdown_1")),
        "slowdown_5": num(c.get("slowdown_5")),
        "slowdown_10": num(c.get("slowdown_10")),
        "score": num(c.get("score")),
        "graphs": c.get("num_graphs"),
    }
