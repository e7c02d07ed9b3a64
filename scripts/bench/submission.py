"""segrank's score and submission CSV files: `predict --scores` / `hwmodel --scores`
(ID,config,score) read, ID,TopConfigs submissions written."""

from .common import BenchError


def read_scores(path):
    """ID,config,score CSV -> {id: [scores by config index]}."""
    out = {}
    with open(path) as f:
        header = f.readline()
        if not header.startswith("ID,config,score"):
            raise BenchError(f"{path}: unexpected header {header!r}")
        for line in f:
            gid, cfg, score = line.rstrip("\n").split(",")
            lst = out.setdefault(gid, [])
            if int(cfg) != len(lst):
                raise BenchError(f"{path}: configs of {gid} not in order 0, 1, ...")
            lst.append(float(score))
    return out


def write_submission(path, rows):
    """Writes an ID,TopConfigs submission: rows = [(graph ID, config order)]."""
    with open(path, "w") as f:
        f.write("ID,TopConfigs\n")
        for gid, order in rows:
            f.write(f"{gid},{';'.join(str(i) for i in order)}\n")
