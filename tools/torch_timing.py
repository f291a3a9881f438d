"""CUDA timing of PyTorch callables, shared by the tools/bench_*.py scripts.

Kernels are timed, not launches: fn() called `calls` times inside one CUDA graph that is
replayed between two CUDA events (graph_us), or many back-to-back calls between two events
(loop_us); the time per call is the total divided by the count (as `tinyc bench` does).
event_times_ms times single calls, each between two events (launch latency included: only
for calls that take milliseconds).  The scripts run as `python3 tools/bench_x.py`, so
`import torch_timing` finds this file beside them.
"""
import statistics


def _span_ms(fn, calls, events):
    """fn() `calls` times between the two events, waited for: the milliseconds between."""
    e0, e1 = events
    e0.record()
    for _ in range(calls):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1)


def _events():
    import torch
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def _warm_up(fn, warmup):
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()


def graph_times_us(fn, calls, replays=7, warmup=3):
    """fn() `calls` times captured into one CUDA graph, after `warmup` calls on the capture's
    side stream (as torch requires); each of `replays` replays timed between two events.
    Returns the microseconds per call of every replay."""
    import torch
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    g.replay()
    torch.cuda.synchronize()
    ev = _events()
    times = [_span_ms(g.replay, 1, ev) * 1e3 / calls for _ in range(replays)]
    del g
    return times


def graph_us(fn, calls, replays=7, warmup=3):
    """Median microseconds per call of graph_times_us."""
    return statistics.median(graph_times_us(fn, calls, replays, warmup))


def loop_us(fn, iters, warmup=10, repeats=1):
    """fn() `iters` times back to back between two events, after `warmup` calls: microseconds
    per call (the median of `repeats` such runs)."""
    _warm_up(fn, warmup)
    ev = _events()
    return statistics.median(_span_ms(fn, iters, ev) * 1e3 / iters for _ in range(repeats))


def event_times_ms(fn, iters, warmup=3):
    """fn() `iters` times, each between two events, after `warmup` calls: the milliseconds of
    every call."""
    _warm_up(fn, warmup)
    ev = _events()
    return [_span_ms(fn, 1, ev) for _ in range(iters)]
