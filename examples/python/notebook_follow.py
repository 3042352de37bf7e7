"""Following a job from a notebook: paste the cells into Jupyter (each
`# %%` is a cell), or run the file as a script.

Connects as the CLI does (ACCUMULUS_CONTROLLER, ACCUMULUS_CA_FILE,
ACCUMULUS_TOKEN_FILE). A watch picks up where it left off: keep `last`, and
a re-run cell (or a restarted kernel that saved it) goes on from there.
"""
# %%
import os

from accumulus import Client, enum_value_name, job_pb2

client = Client()
# Any spec file; ACCUMULUS_EXAMPLE_SPEC picks another.
spec = os.environ.get("ACCUMULUS_EXAMPLE_SPEC") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "jobs", "mlp-accumulate.yaml")
job = client.submit(spec)
print(job.id, "global batch", job.batch.global_batch)
last = 0

# %%  Live progress: one line per 10 steps, then the end.
for event in client.watch(job.id, after_sequence=last):
    last = event.sequence
    kind = event.WhichOneof("kind")
    if kind == "step" and (event.step.step % 10 == 0 or event.step.step == 1):
        s = event.step
        noise = f", B_noise {s.noise.noise_scale:.0f}" if s.noise.noise_scale > 0 else ""
        print(f"step {s.step}/{s.steps_total}: loss {s.loss:.4f}, "
              f"{s.samples_per_second:.0f} samples/s{noise}")
    elif kind == "state":
        print("state:", enum_value_name(job_pb2.JobState.DESCRIPTOR, event.state.state),
              event.state.reason)

# %%  The whole history as a table (pandas), for plotting.
try:
    frame = client.steps_frame(job.id)
    print(frame[["loss", "lr", "effective_batch", "noise_scale"]].tail())
except ImportError:
    rows = client.steps(job.id)
    print(rows[-1])
