#!/usr/bin/env python3
"""Markdown summary of accumulus_streaming_bench's JSON.

Usage: streaming_report.py RESULTS.json COMMIT > RESULTS.md
Per watcher count: events/s through the controller and through a bare gRPC
echo, deliveries/s, the controller's share of the echo's rate, and latency
from the worker sending an event to a watcher receiving it.
"""
import json
import os
import sys
from datetime import datetime, timezone


def main(path, commit):
    with open(path) as f:
        rows = json.load(f)
    by = {(r["path"], r["watchers"]): r for r in rows}
    print("# Controller streaming: step events from a worker to N watchers")
    print()
    print("- date: %s, commit: %s, %d CPUs" % (
        datetime.now(timezone.utc).isoformat(timespec="seconds"), commit, os.cpu_count()))
    print("- controller: a real one (SQLite state on), events sent over the worker link, one "
          "channel per watcher; bare gRPC: a server-streaming echo of the same messages, one "
          "frame per event (plain) or with gRPC's buffer hint on all but the last write "
          "(coalesced, as the controller writes to a watcher that is behind)")
    print()
    print("- saturated: the worker sends as fast as it can (latency is then mostly queueing); "
          "paced: 200 events/s, as a fast trainer emits steps (latency of the relay itself)")
    print()
    print("| watchers | controller events/s | deliveries/s | bare gRPC events/s (plain, "
          "coalesced) | controller ÷ bare (plain, coalesced) | paced p50 | paced p99 | "
          "saturated p99 | bare p99 (plain) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in sorted({r["watchers"] for r in rows}):
        c, b = by[("controller", n)], by[("bare grpc", n)]
        bc = by[("bare grpc coalesced", n)]
        p = by.get(("controller paced", n), {"p50_ms": float("nan"), "p99_ms": float("nan")})
        print("| %d | %.0f | %.0f | %.0f, %.0f | %.0f%%, %.0f%% | %.2f ms | %.2f ms | %.0f ms "
              "| %.0f ms |" % (
                  n, c["events_per_second"], c["deliveries_per_second"], b["events_per_second"],
                  bc["events_per_second"],
                  100 * c["events_per_second"] / b["events_per_second"],
                  100 * c["events_per_second"] / bc["events_per_second"], p["p50_ms"],
                  p["p99_ms"], c["p99_ms"], b["p99_ms"]))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
