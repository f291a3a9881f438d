#!/usr/bin/env python3
"""tools/torch_timing.py without a GPU: a stand-in `torch` module whose events read a
simulated GPU clock that every call of the timed function advances by a known amount, so
the per-call figures can be checked by hand.

usage: test_torch_timing.py SOURCE_DIR      (exit 0 pass, 1 fail)
"""
import os
import sys
import types

CALL_US = 2.5           # what one call of the timed function costs on the fake GPU
clock = [0.0]           # the fake GPU clock, in ms


class Event:
    def __init__(self, enable_timing=False):
        self.t = None

    def record(self, stream=None):
        self.t = clock[0]

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return other.t - self.t


class Graph:
    """Records the calls made during capture; replay repeats them."""
    capturing = None

    def __init__(self):
        self.calls = []

    def replay(self):
        for fn in self.calls:
            fn(replaying=True)


class GraphCtx:
    def __init__(self, g, stream=None):
        self.g = g

    def __enter__(self):
        Graph.capturing = self.g

    def __exit__(self, *exc):
        Graph.capturing = None


class StreamCtx:
    def __init__(self, s):
        pass

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        pass


class Stream:
    def wait_stream(self, other):
        pass


def make_torch():
    """The stand-in torch module (only what torch_timing uses)."""
    cuda = types.SimpleNamespace(
        Event=Event, Stream=Stream, CUDAGraph=Graph, graph=GraphCtx, stream=StreamCtx,
        synchronize=lambda: None, current_stream=lambda: Stream())
    return types.SimpleNamespace(cuda=cuda)


def work(replaying=False):
    """The timed function: costs CALL_US on the clock, or is recorded while capturing."""
    if Graph.capturing is not None and not replaying:
        Graph.capturing.calls.append(work)
        return
    clock[0] += CALL_US / 1e3


def main():
    sys.modules["torch"] = make_torch()
    sys.path.insert(0, os.path.join(sys.argv[1], "tools"))
    import torch_timing as tt
    fails = 0

    def check(ok, what):
        nonlocal fails
        print(("ok   " if ok else "FAIL ") + what)
        fails += not ok

    close = lambda x, y: abs(x - y) < 1e-9  # noqa: E731
    g = tt.graph_us(work, 20, replays=5)
    check(close(g, CALL_US), f"graph_us: {g} us per call, {CALL_US} expected")
    ts = tt.graph_times_us(work, 8, replays=3, warmup=0)
    check(len(ts) == 3 and all(close(t, CALL_US) for t in ts), f"graph_times_us: {ts}")
    before = clock[0]
    lp = tt.loop_us(work, 40, warmup=4, repeats=3)
    check(close(lp, CALL_US), f"loop_us: {lp} us per call")
    check(close(clock[0] - before, (4 + 3 * 40) * CALL_US / 1e3),
          "loop_us made warmup + repeats * iters calls")
    ev = tt.event_times_ms(work, 6, warmup=2)
    check(len(ev) == 6 and all(close(t, CALL_US / 1e3) for t in ev), f"event_times_ms: {ev}")
    print("passed" if not fails else f"{fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
