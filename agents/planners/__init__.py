"""Planners: the LLM planner (backbone + strategy head) and its single-agent Gymnasium view.
"""
