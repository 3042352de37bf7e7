"""examples/python, run as a user runs them, against the test cluster."""
import os
import re
import subprocess
import sys

from conftest import REPO

EXAMPLES = os.path.join(REPO, "examples", "python")


def run_example(cluster, name, *args, env=None):
    environment = dict(os.environ, ACCUMULUS_CONTROLLER=cluster.address,
                       ACCUMULUS_CA_FILE=cluster.ca_file, ACCUMULUS_TOKEN=cluster.tokens["admin"],
                       **(env or {}))
    environment.pop("ACCUMULUS_TOKEN_FILE", None)
    done = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], env=environment,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_split_sweep_shows_coinciding_loss_curves(cluster):
    out = run_example(cluster, "split_sweep.py", "--global-batch", "64", "--samples", "1024")
    lines = [line for line in out.splitlines() if "largest relative difference" in line]
    assert [line.split()[0] for line in lines] == ["64", "16", "4"]
    for line in lines:
        assert "32 steps" in line  # 1024 / 64 × 2 epochs
        assert float(line.rsplit(" ", 1)[1]) < 1e-4, line


def test_the_notebook_follows_a_job_to_its_end(cluster, tmp_path):
    spec = tmp_path / "small.yaml"
    spec.write_text("""
name: notebook
model: {kind: mlp, hidden: [16]}
data: {kind: synthetic, task: classification, samples: 640, features: 8, outputs: 3}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.1}
epochs: 1
""")
    out = run_example(cluster, "notebook_follow.py", env={"ACCUMULUS_EXAMPLE_SPEC": str(spec)})
    assert re.search(r"global batch 32", out)
    assert "step 20/20" in out
    assert "state: succeeded" in out
    # The table's last row is step 20, with the measured noise scale.
    assert re.match(r"20\s+\S+\s+\S+\s+32\s+\S+$", out.splitlines()[-1]), out
