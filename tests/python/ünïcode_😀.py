# -*- coding: utf-8 -*-
# Non-ASCII file name and function names of all three PEP 393 kinds
# (Latin-1, BMP CJK, astral U+20000); exec'ed by target.py (Python 3 only).


def 𠀀_astral():
    sleep_forever()  # MARK:astral_call


def naïve_函数():
    𠀀_astral()  # MARK:cjk_call


def naïve_été():
    naïve_函数()  # MARK:latin_call


def run():
    naïve_été()  # MARK:unicode_run_call
