# -*- coding: utf-8 -*-
import time

# The thread's own CPU time where the interpreter has it (3.7+): a loaded
# machine then stretches the run instead of thinning its samples.
clock = getattr(time, "thread_time", time.time)


def naïve_函数(seconds):
    deadline = clock() + seconds
    x = 0
    while clock() < deadline:
        for i in range(2000):
            x += i  # LEAF-UNICODE
    return x
