# -*- coding: utf-8 -*-
import time


def naïve_函数(seconds):
    deadline = time.time() + seconds
    x = 0
    while time.time() < deadline:
        for i in range(2000):
            x += i  # LEAF-UNICODE
    return x
