"""A simulated OpenMP region driven through the runtime's window path (``predictor.
predict_window`` with final=False, then ``RegionSteer.step``), for the steering tests.
Standard library only: the no-numpy test imports it in a fresh interpreter."""
from __future__ import annotations

from corecast.model.runtime.predictor import predict_window
from corecast.recording.record import region_from_json
from corecast.model.runtime.steering import RegionSteer


class SimRegion:
    """``per_call(k)``: seconds per call at team k; ``stall_share(k)``: share of the thread
    time lost to ``category`` stalls at team k.  The region fills ``busy`` of every window."""

    def __init__(self, own, per_call, stall_share, category="critical", window_s=0.2, busy=0.9, first_window_s=None,
                 acquisitions=0):
        self.own, self.per_call, self.stall_share, self.category = own, per_call, stall_share, category
        self.acquisitions = acquisitions  # critical sections entered per call, at any team
        self.window_s, self.busy = window_s, busy
        # The runtime's first window is shorter than the rest (native/sampler.c).
        self.first_window_s = window_s if first_window_s is None else first_window_s
        self.hist: dict[int, list[float]] = {}
        self.stalls = 0.0
        self.elapsed = 0.0
        self.team = own
        self.teams: list[int] = []  # team of every window
        self.histories: dict = {}
        self.steer = RegionSteer(own)
        self.in_flight = 0.0  # share of a call the team ran so far (calls longer than a window)

    def record(self) -> dict:
        calls = sum(int(c) for c, _ in self.hist.values())
        wall = sum(w for _, w in self.hist.values())
        # A live window may hold no finished call yet (a call longer than a window); the
        # struct's decoder takes that, while a recorded line never has calls 0 and its
        # decoder refuses it: the line is decoded with 1 and given the window's count.
        region = region_from_json({
            "name": "main._omp_fn.0", "object": "sim", "runtime": "openmp", "threads": self.own,
            "calls": max(calls, 1), "wall_s": wall, "requested": self.own,
            "stalls_s": {self.category: self.stalls},
            "counters": {"busy_s": self.own * wall - self.stalls, "serial_s": 0.0,
                         "acquisitions": {"critical": self.acquisitions * calls}},
            "by_team": [{"threads": t, "calls": int(c), "wall_s": w} for t, (c, w) in sorted(self.hist.items())],
        })
        region["calls"] = calls
        return region

    def window(self) -> int:
        """Run one window at the current team, then let steering decide; the next team."""
        k = self.team
        span = self.first_window_s if not self.teams else self.window_s
        wall = self.busy * span
        if self.teams and self.teams[-1] != k:
            self.in_flight = 0.0  # the call in flight at a step ended at the old count
        done = self.in_flight + wall / self.per_call(k)
        calls = int(done)
        self.in_flight = done - calls
        self.teams.append(k)
        entry = self.hist.setdefault(k, [0, 0.0])
        entry[0] += calls
        entry[1] += calls * self.per_call(k)
        self.stalls += self.stall_share(k) * k * calls * self.per_call(k)
        self.elapsed += span
        region = self.record()
        (pred,) = predict_window([region], self.own, self.own, self.own, self.histories, final=False)
        history = self.histories[("main._omp_fn.0", "sim")]
        self.team = self.steer.step(history, region, pred, self.elapsed, self.window_s)
        return self.team

    def run(self, windows: int) -> "SimRegion":
        for _ in range(windows):
            self.window()
        return self
