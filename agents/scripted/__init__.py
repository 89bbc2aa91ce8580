"""Agents with no model (no torch import) and toy random-init trainable agents for tests.
"""
