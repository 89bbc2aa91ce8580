"""Runtime instruments: speed, memory and stability of rollouts, training steps and the environment.
"""
