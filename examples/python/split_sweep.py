#!/usr/bin/env python3
"""Every split of one global batch, trained side by side: the loss curves
coincide, because k micro-batches give the update of one big batch.

    python split_sweep.py [--controller HOST:PORT] [--global-batch 256] [--samples N]
                          [--plot sweep.png]

Connects as the CLI does (ACCUMULUS_CONTROLLER, ACCUMULUS_CA_FILE,
ACCUMULUS_TOKEN_FILE; `accumulus up` prints them). Prints each split's loss
per step and the largest difference from the one big batch; with matplotlib
installed, --plot draws the curves over each other.
"""
import argparse

from accumulus import Client, job_pb2

SPEC = {
    "model": {"kind": "mlp", "hidden": [128, 128]},
    "data": {"kind": "synthetic", "task": "classification", "samples": 8192, "features": 32,
             "outputs": 10, "seed": 11},
    "optimizer": {"kind": "adamw", "lr": 1e-3},
    "epochs": 2,
    "seed": 7,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--controller")
    parser.add_argument("--global-batch", type=int, default=256)
    parser.add_argument("--samples", type=int, default=8192, help="of the synthetic data set")
    parser.add_argument("--plot", help="a PNG of the loss curves (needs matplotlib)")
    args = parser.parse_args()
    SPEC["data"]["samples"] = args.samples

    splits = [m for m in (256, 64, 16, 4) if args.global_batch % m == 0]
    with Client(args.controller) as client:
        jobs = {}
        for micro in splits:
            spec = dict(SPEC, name=f"sweep-{micro}x{args.global_batch // micro}",
                        micro_batch=micro, accumulation_steps=args.global_batch // micro,
                        labels={"sweep": f"global-{args.global_batch}"})
            jobs[micro] = client.submit(spec).id
        losses = {}
        for micro, job_id in jobs.items():
            final = client.wait(job_id)
            if final.state != job_pb2.JOB_STATE_SUCCEEDED:
                raise SystemExit(f"{job_id} ended {job_pb2.JobState.Name(final.state)}: "
                                 f"{final.reason}")
            losses[micro] = [row["loss"] for row in client.steps(job_id)]

    reference = losses[splits[0]]
    for micro, curve in losses.items():
        worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(curve, reference))
        print(f"{micro:>4} × {args.global_batch // micro:<4} {len(curve)} steps, final loss "
              f"{curve[-1]:.6f}, largest relative difference from {splits[0]} × 1: {worst:.2e}")
    if args.plot:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            raise SystemExit("--plot needs matplotlib: pip install matplotlib") from None
        for micro, curve in losses.items():
            plt.plot(range(1, len(curve) + 1), curve,
                     label=f"micro {micro} × {args.global_batch // micro}")
        plt.xlabel("optimizer step")
        plt.ylabel("loss")
        plt.legend()
        plt.title(f"global batch {args.global_batch}, every split")
        plt.savefig(args.plot, dpi=120)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
