"""Helpers for tests driving tests/targets/heartbeat."""
import os
import re
import signal
import subprocess
import time

import emberlib as E


def read_state(path):
    try:
        with open(path) as f:
            line = f.read().strip()
    except OSError:
        return None
    d = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
    if "tids" not in d:
        return None
    st = {k: int(v) for k, v in d.items() if re.fullmatch(r"[0-9]+", v)}
    st["tids"] = [int(t) for t in d["tids"].split(",")]
    return st


class Heartbeat:
    def __init__(self, state, trigger=None):
        self.state = state
        cmd = [E.target("heartbeat"), state] + ([trigger] if trigger else [])
        self.p = subprocess.Popen(cmd, start_new_session=True)
        self.pid = self.p.pid
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            st = read_state(state)
            if st and all(st["tids"]):
                return
            time.sleep(0.05)
        self.stop()
        E.fail_now("heartbeat target did not start within 10 s")

    def read(self):
        return read_state(self.state)

    def stop(self):
        """SIGTERM; returns the exit status (-15 if it was alive and died of it)."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()
