"""Replay of a frozen greedy reasoner: its on-disk step store, the replaying reasoner and the plan tree.
"""
