"""Grading instruments: the answer checker's accuracy and the code sandbox's throughput under hostile programs.
"""
